/*
 * openai_chat.h: the OpenAI Chat Completions stream (`chat.completion.chunk`), read for
 * the adapter of adapter.h. Internal to the adapter: adapter.c parses each
 * payload and hands it here; see adapter.h ("Decisions ... openai-chat") for the
 * rules this module follows.
 */
#ifndef TS_OPENAI_CHAT_H
#define TS_OPENAI_CHAT_H

#include "stream/json_view.h"
#include "stream/adapter.h"

/* One parsed chunk (jv holds the payload, token 0 its top-level value). */
void ts__openai_chat_event(ts_adapter *a, ts_jv *jv, ts_view event);

/* The `[DONE]` payload: ends every open call, then the turn. */
void ts__openai_chat_done(ts_adapter *a);

#endif /* TS_OPENAI_CHAT_H */
