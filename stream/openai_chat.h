/*
 * openai_chat.h: the OpenAI Chat Completions stream (`chat.completion.chunk`), read for
 * the adapter of model_stream.h. Internal to the adapter: model_stream.c parses each
 * payload and hands it here; see model_stream.h ("Decisions ... openai-chat") for the
 * rules this module follows.
 */
#ifndef TS_OPENAI_CHAT_H
#define TS_OPENAI_CHAT_H

#include "stream/json_view.h"
#include "stream/model_stream.h"

/* One parsed chunk (jv holds the payload, token 0 its top-level value). */
void ts__openai_chat_event(ts_ms *a, ts_jv *jv, ts_view event);

/* The `[DONE]` payload: ends every open call, then the turn. */
void ts__openai_chat_done(ts_ms *a);

#endif /* TS_OPENAI_CHAT_H */
