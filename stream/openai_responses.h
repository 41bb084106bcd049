/*
 * openai_responses.h: the OpenAI Responses API stream (`response.*` events), read for
 * the adapter of adapter.h. Internal to the adapter: adapter.c parses each
 * payload and hands it here; see adapter.h ("Decisions ... openai-responses").
 */
#ifndef TS_OPENAI_RESPONSES_H
#define TS_OPENAI_RESPONSES_H

#include "stream/json_view.h"
#include "stream/adapter.h"

/* One parsed event payload; `event` is the SSE `event:` field (may be empty). */
void ts__openai_responses_event(ts_adapter *a, ts_jv *jv, ts_view event);

/* Nonzero for `event:` names whose payload the adapter does not need and need not
 * parse (`response.created`, `response.in_progress`, `response.queued`: they echo the
 * whole request, tools and all, and would only spend tokens). */
int ts__openai_responses_skip(ts_view event);

#endif /* TS_OPENAI_RESPONSES_H */
