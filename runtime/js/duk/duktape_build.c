/*
 * duktape_build.c: compiles Debian's amalgamated Duktape (/usr/share/duktape/duktape.c)
 * with toolstream's configuration override (ts_duk_config.h, which see). Built as its
 * own CMake object library with warnings off and -O2 in every build type: it is
 * third-party code that does not pass the project's -Wpedantic -Werror.
 */
/* duktape.c defines this itself before it includes duktape.h (and so duk_config.h);
 * the configuration's internal half (date providers, feature macros) depends on it, and
 * here the configuration is read first. */
#define DUK_COMPILING_DUKTAPE
#include "ts_duk_config.h"

#include <duktape.c>

/* Makes the thread that is running on `ctx`'s heap look at the interrupt check at its
 * next bytecode instruction instead of up to 256 Ki instructions later. Called by the
 * sandbox's allocator (on the heap's own thread, never from another one) once the run
 * has reached its memory cap, so that a script that catches "alloc failed" in a loop
 * is stopped before it can spin through garbage collections. */
void ts__duk_request_interrupt(duk_context *ctx);
void ts__duk_request_interrupt(duk_context *ctx) {
	duk_hthread *thr = (duk_hthread *) ctx;
	if (thr != NULL && thr->heap != NULL && thr->heap->curr_thread != NULL) {
		thr->heap->curr_thread->interrupt_counter = 0;
	}
}
