/*
 * anthropic.h: the Anthropic Messages stream (`message_start`, `content_block_*`,
 * `message_delta`, `message_stop`, `ping`, `error`), read for the adapter of
 * adapter.h. Internal to the adapter: adapter.c parses each payload and
 * hands it here; see adapter.h ("Decisions ... anthropic").
 */
#ifndef TS_ANTHROPIC_H
#define TS_ANTHROPIC_H

#include "stream/json_view.h"
#include "stream/adapter.h"

/* One parsed event payload; `event` is the SSE `event:` field (may be empty; the
 * payload's `type` wins when both are there). */
void ts__anthropic_event(ts_adapter *a, ts_jv *jv, ts_view event);

#endif /* TS_ANTHROPIC_H */
