/*
 * event.h: the thread event, and its one canonical JSON encoding.
 *
 * Every event toolstream prints, publishes or stores is a ts_event encoded by
 * ts_event_encode; nothing assembles event JSON by hand anywhere else. The schema,
 * with its version, is documented in docs/events.md.
 *
 * Encoding: one JSON object, no newline, keys in a fixed order:
 *   v, type, thread, seq, offset, [call_id, tool, index], then the type's own fields.
 * Strings are escaped by ts_buf_append_json_string (always valid JSON and UTF-8);
 * `arguments` and `usage` are embedded as the JSON text they already are (the tap
 * validated `arguments` strictly; `usage` is the provider's object as jsmn delimited it).
 */
#ifndef TS_EVENT_H
#define TS_EVENT_H

#include <stdint.h>

#include "base/strbuf.h"
#include "stream/tap.h"

/* The schema version carried in every event's "v". */
#define TS_EVENT_SCHEMA_VERSION 1

typedef struct {
  ts_view thread;
  uint64_t seq;
  ts_tap_event body; /* type and fields (the tap's vocabulary) */
} ts_event;

/* Appends the event's JSON object to `out`. Returns TS_E_OK or the buffer's error. */
int ts_event_encode(const ts_event *ev, ts_buf *out);

#endif /* TS_EVENT_H */
