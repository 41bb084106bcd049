/*
 * latency_svg.h: a benchmark's requests as an SVG picture (`toolstream bench --svg FILE`).
 *
 * Two plots in one self-contained SVG document (no script, no external reference, so any
 * browser or image viewer opens it):
 *   - a timeline: one row per tool call (a <g class="call"> each, with data-request,
 *     data-call and data-tool attributes), on a shared time axis in milliseconds from its
 *     request's send time (or, when that is not known, as from a store, from the request's
 *     first event): the request sent, the first byte, the call's name, its progress label,
 *     its complete arguments and its result, each a mark with a <title> tooltip, and a
 *     bar from the first mark to the last;
 *   - the distribution of the lead (lead_ms over the calls with a label): a histogram of
 *     TS_LAT_SVG_BINS bins with its p50 and p90 marked.
 * At most TS_LAT_SVG_MAX_ROWS rows are drawn; a note says how many calls were left out.
 * Text from the stream (tool names, call ids) is escaped for XML.
 */
#ifndef TS_AGENT_LATENCY_SVG_H
#define TS_AGENT_LATENCY_SVG_H

#include "agent/latency.h"
#include "base/strbuf.h"

#define TS_LAT_SVG_MAX_ROWS 2000 /* a taller picture is not read by anyone */
#define TS_LAT_SVG_BINS 20

/* Appends the document to `out`. `title` (may be NULL) heads it. Returns TS_E_OK or the
 * buffer's error (TS_E_NOMEM, TS_E_LIMIT). */
int ts_lat_svg(const ts_lat_set *s, const char *title, ts_buf *out);

#endif /* TS_AGENT_LATENCY_SVG_H */
