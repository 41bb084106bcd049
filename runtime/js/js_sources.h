/*
 * js_sources.h: the JavaScript of the sandbox, embedded at build time.
 *
 * runtime/js/prelude.js (the ES2015+ built-ins Duktape lacks), toolkit.js (`z`,
 * defineTool, the tool runner) and transpile.js (modern JavaScript and TypeScript down
 * to what Duktape runs) are turned into C arrays by runtime/js/embed.cmake; each array
 * is NUL-terminated, and its length leaves the NUL out. Internal to runtime/js.
 */
#ifndef TS_JS_SOURCES_H
#define TS_JS_SOURCES_H

#include <stddef.h>

extern const char ts__js_prelude[];
extern const size_t ts__js_prelude_len;
extern const char ts__js_toolkit[];
extern const size_t ts__js_toolkit_len;
extern const char ts__js_transpile[];
extern const size_t ts__js_transpile_len;

#endif /* TS_JS_SOURCES_H */
