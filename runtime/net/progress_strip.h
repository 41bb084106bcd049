/*
 * progress_strip.h: the gateway's "x-progress-argument" rewrite of a model request body.
 *
 * A client may mark, in a tool's JSON Schema, which argument tells a human what the
 * call is doing: "x-progress-argument": "NAME" at the top of the schema. Providers do not
 * know the keyword (some refuse unknown ones), so before the request goes upstream every
 * member with that key anywhere inside a tool is removed, with its comma; every other
 * byte of the body stays exactly as it was. The top-level one is remembered as the
 * tool's progress argument for the tap (stream/tool_defs.h).
 *
 * Where tool schemas live, per provider: OpenAI Chat tools[].function.parameters;
 * Responses tools[].parameters; Anthropic tools[].input_schema; Gemini
 * tools[].functionDeclarations[].parameters or parametersJsonSchema (also
 * function_declarations); Bedrock toolConfig.tools[].toolSpec.inputSchema.json (the
 * provider table says, stream/provider.h). Only members inside those tool arrays are
 * touched: the keyword in a message's text stays.
 */
#ifndef TS_NET_PROGRESS_STRIP_H
#define TS_NET_PROGRESS_STRIP_H

#include <stddef.h>

#include "stream/tool_defs.h"

#define TS_PROGRESS_KEYWORD "x-progress-argument"

/* Strips the keyword from the tools of the JSON request `body` (len bytes) and records
 * the progress arguments it names in *defs. Returns a malloc'd rewritten body
 * (*out_len bytes; the caller frees it), or NULL when the body is to be forwarded
 * untouched: no keyword, not JSON, no tool array, over 256 MiB, or out of memory. */
char *ts_progress_strip(const char *body, size_t len, ts_tool_defs *defs, size_t *out_len);

#endif /* TS_NET_PROGRESS_STRIP_H */
