/*
 * js_sources.h: the JavaScript of the sandbox, embedded at build time as Duktape bytecode.
 *
 * runtime/js/prelude.js (the ES2015+ built-ins Duktape lacks), toolkit.js (`z`,
 * defineTool, the tool runner) and transpile.js (modern JavaScript and TypeScript down
 * to what Duktape runs) are compiled by runtime/js/duk/bytecode_tool.c, with the same
 * Duktape build, into dumps for duk_load_function. Each file is eval code whose value is
 * one function expression. Internal to runtime/js.
 */
#ifndef TS_JS_SOURCES_H
#define TS_JS_SOURCES_H

#include <stddef.h>

extern const unsigned char ts__js_prelude_bc[];
extern const size_t ts__js_prelude_bc_len;
extern const unsigned char ts__js_toolkit_bc[];
extern const size_t ts__js_toolkit_bc_len;
extern const unsigned char ts__js_transpile_bc[];
extern const size_t ts__js_transpile_bc_len;

#endif /* TS_JS_SOURCES_H */
