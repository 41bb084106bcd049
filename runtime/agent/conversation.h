/*
 * conversation.h: a thread's stored conversation as a model request.
 *
 * The store keeps messages in commit order: the user's prompt, then per turn the tool
 * results (committed while the turn streams) and the assistant message of the turn
 * ({"turn":N,"text":"...","tool_calls":[{"id","name","arguments"}]}). A provider wants
 * the assistant message first and its results after it, paired by call id. This module
 * rebuilds that order as the provider table's neutral list (stream/provider.h), and the
 * provider's row writes the streaming request body in its shape: Chat Completions,
 * Responses, Anthropic Messages, Gemini, Bedrock ConverseStream, Ollama and Cohere (the
 * shapes, side by side, are in docs/providers.md "How `run` writes each request"). What
 * each provider wants differently (results as `tool` messages, as `tool_result` or
 * `toolResult` blocks of one user message, as `function_call_output` items or as
 * `functionResponse` parts paired by name) is the row's business, not this module's.
 *
 * So the conversation as stored can be sent to any of them, and a thread may change
 * provider between runs. Tool results whose assistant message was never stored (a crash
 * in the middle of a turn) are left out, and so are calls of a stored assistant message that have no result (the model is told
 * nothing false; resume resolves in-flight calls before the next request).
 */
#ifndef TS_CONVERSATION_H
#define TS_CONVERSATION_H

#include "base/strbuf.h"
#include "store/store.h"
#include "stream/provider.h"
#include "base/view.h"
#include "tools/registry.h"
#include "agent/run.h"

/* Appends the streaming request body for `provider` (a row of the provider table that
 * writes requests) to `out`. Returns TS_E_OK, TS_E_INVAL (no provider, or one `run`
 * cannot talk to: its `request` is NULL), a store error, TS_E_NOMEM or TS_E_LIMIT (the
 * buffer's limit). `max_tokens` is for providers that need one (0: their default). */
int ts_conversation_request(ts_store *s, const char *thread, const ts_registry *reg,
                            const ts_provider *provider, const char *model, unsigned max_tokens,
                            ts_buf *out);

/* The request for turn `t` of the agent loop (agent/run.h): as ts_conversation_request,
 * with the composition's view of it (agent/compose.h): t->system as the first (system)
 * message; t->history's conversation before the thread's own, its texts (user messages and
 * the assistant's text) when t->include_chat, its calls with their results when
 * t->include_past_tools, nothing of it otherwise; in a dual_ai session (t->side), the other
 * side's replies as user messages without their calls. t->model, when set, replaces
 * `model`. Returns as ts_conversation_request. */
int ts_conversation_request_turn(const ts_agent_turn *t, const ts_provider *provider,
                                 const char *model, unsigned max_tokens, ts_buf *out);

/* Calls cb for each tool call of the stored assistant message of turn `turn_no` (1-based, as
 * in its "turn" field), in index order: its index, call id, tool name and arguments (raw
 * JSON; {NULL, 0} when the call's arguments never completed or were unusable). How a turn parked for a
 * variable is completed after a restart. Returns the number of calls (0 when the turn's
 * message is not stored), TS_E_ABORTED when cb returned non-zero, or a negative ts_err. */
typedef int (*ts_conversation_call_cb)(void *user, uint32_t index, ts_view id, ts_view name,
                                       ts_view args);
int ts_conversation_turn_calls(ts_store *s, const char *thread, uint32_t turn_no,
                               ts_conversation_call_cb cb, void *user);

#endif
