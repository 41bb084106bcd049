/*
 * ts_duk_config.h: toolstream's override of the Duktape configuration.
 *
 * Debian's duktape-dev ships the amalgamated Duktape 2.7 (/usr/share/duktape/duktape.c,
 * duktape.h, duk_config.h). Its duk_config.h is the one the shared libduktape was built
 * with, and that build has no execution timeouts: DUK_USE_INTERRUPT_COUNTER and
 * DUK_USE_EXEC_TIMEOUT_CHECK are off, so a `while (true) {}` can never be stopped. We
 * therefore compile duktape.c ourselves (runtime/duk/duktape_build.c) with Debian's
 * configuration plus the two options below, and nothing of Duktape is copied here.
 *
 * How it is found: this file is included first, by duktape_build.c and by
 * runtime/sandbox.c (the one module that uses Duktape). It includes Debian's
 * duk_config.h through the system include path /usr/share/duktape (set on the CMake
 * target, before /usr/include, so the shared library's copy is never picked), which sets
 * DUK_CONFIG_H_INCLUDED; when duktape.h later includes "duk_config.h" again, the guard
 * makes that a no-op, and the options below stay in force.
 *
 * DUK_USE_EXEC_TIMEOUT_CHECK(udata) is evaluated every DUK_HTHREAD_INTCTR_DEFAULT
 * (256 Ki) bytecode instructions with the heap's udata (the sandbox's per-run state);
 * once it returns true Duktape throws RangeError "execution timeout" and keeps throwing
 * at every instruction until the error has left the outermost protected call, so a
 * try/catch in the script cannot swallow it as long as the check keeps returning true.
 */
#ifndef TS_DUK_CONFIG_H
#define TS_DUK_CONFIG_H

#include <duk_config.h>

#if !defined(DUK_CONFIG_H_INCLUDED)
#error "Debian's duk_config.h was not found (is duktape-dev installed?)"
#endif

/* Implemented in runtime/sandbox.c: nonzero when the run that owns the heap must stop
 * (deadline passed, terminate requested, memory cap reached). */
int ts__sandbox_timeout_check(void *udata);

/* Implemented in runtime/js/sandbox.c: Math.random from a generator seeded per run (a
 * forked copy of a template heap would otherwise repeat the template's sequence). */
double ts__sandbox_random(void *udata);
#undef DUK_USE_GET_RANDOM_DOUBLE
#define DUK_USE_GET_RANDOM_DOUBLE(udata) ts__sandbox_random((udata))

#undef DUK_USE_INTERRUPT_COUNTER
#define DUK_USE_INTERRUPT_COUNTER
#undef DUK_USE_EXEC_TIMEOUT_CHECK
#define DUK_USE_EXEC_TIMEOUT_CHECK(udata) ts__sandbox_timeout_check((udata))

/* No reference counts: garbage is reclaimed by mark-and-sweep alone. Every run is a
 * forked child holding a copy-on-write copy of a template heap (runtime/js/sandbox.c),
 * and with reference counting each value pushed, stored or dropped writes the count in
 * the header of the object it names, so touching a prelude function, a built-in or an
 * interned string copied that page: the page faults cost a short run more than its
 * script did (docs/performance.md: the cached modern snippet went from 1.37 to 0.93 ms of
 * CPU, its page faults from 164 to 105). A collection, when one runs, marks every
 * reachable object and so copies the template's pages once; a short run seldom
 * allocates enough to start one. At the memory cap Duktape collects and retries before
 * it gives up, which is how garbage is reclaimed there (sb_refuse). The price: a script
 * that makes garbage quickly holds on to it until the next collection (within its cap),
 * and finalizers run later (the sandbox exposes none). */
#undef DUK_USE_REFERENCE_COUNTING

/* And no voluntary collections: Duktape collects when an allocation is refused (at the
 * run's memory cap, sb_refuse) and when the sandbox asks (duk_gc after a template is
 * built). A run is short-lived and capped, so collecting on a schedule only spent time
 * (and copied every template page it marked) on memory the process's exit frees anyway:
 * without it the cached modern snippet costs 0.86 ms of CPU instead of 1.10, a trivial
 * run 0.35 instead of 0.44 (docs/performance.md). What a run reports as its peak memory
 * then includes garbage not yet collected, up to the cap. */
#undef DUK_USE_VOLUNTARY_GC
#undef DUK_USE_FAST_REFCOUNT_DEFAULT
#undef DUK_USE_REFCOUNT16
#undef DUK_USE_REFCOUNT32

#endif /* TS_DUK_CONFIG_H */
