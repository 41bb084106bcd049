/*
 * ui_stream.h: thread events in the encodings UI frameworks already parse.
 *
 * A translator turns the canonical events of one thread (docs/events.md: the JSON the
 * tap prints, the bus carries and the store keeps), in seq order, into
 *   - AG-UI events (RUN_STARTED, TEXT_MESSAGE_START/CONTENT/END, TOOL_CALL_START/ARGS/END,
 *     TOOL_CALL_RESULT, RUN_FINISHED, RUN_ERROR, CUSTOM), or
 *   - the AI SDK's UI message stream chunks (start, start-step, text-start/delta/end,
 *     tool-input-start/delta/available/error, tool-output-available/error, finish-step,
 *     error, finish).
 * docs/ui.md gives the whole mapping. What a UI wants early is there early: the progress
 * label rides on the call's first frame (AG-UI: TOOL_CALL_START's metadata.progress; AI
 * SDK: tool-input-start's title), and a call whose arguments the provider sent whole still
 * gets its arguments as one ARGS / tool-input-delta frame before it ends.
 *
 * Runs and steps: a model turn is one AG-UI run (and one AI SDK step). A turn's tool
 * results follow its turn_finished, so the run is closed lazily: by the next turn's first
 * event, by a stream error (RUN_ERROR), or by ts_ui_finish at the end of a finite stream.
 *
 * Each output frame is one JSON object handed to the callback; string values are copied
 * from the input as they were encoded there, so the output is valid JSON whenever the
 * input was. Input that is not an event object is an error and produces nothing.
 *
 * Memory: a translator holds per call of the current turn its id and name (bounded by
 * TS_UI_MAX_CALLS calls per turn, and their lengths by the event limits), and nothing per
 * event: arguments and results are copied through, never kept.
 */
#ifndef TS_UI_STREAM_H
#define TS_UI_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "base/view.h"

typedef enum {
  TS_UI_AGUI = 1,  /* AG-UI events */
  TS_UI_AISDK = 2, /* the AI SDK UI message stream (v1) */
} ts_ui_format;

/* Calls per turn a translator keeps track of; a call with a higher index is reported
 * without its id bookkeeping (its frames still go out, keyed by its own call_id). */
#define TS_UI_MAX_CALLS 1024

/* Called for each output frame (a JSON object, no newline); valid during the call. Return
 * nonzero to stop: the translating function then returns TS_E_ABORTED. */
typedef int (*ts_ui_emit)(void *user, const char *frame, size_t len);

typedef struct ts_ui ts_ui;

/* "agui" / "ai-sdk" (also "aisdk") to a format; -1 for anything else. */
int ts_ui_format_parse(const char *name);
const char *ts_ui_format_name(ts_ui_format f);

/* A translator for one thread's stream. TS_E_OK and *out; TS_E_INVAL for an unknown format
 * or NULL arguments; TS_E_NOMEM. */
int ts_ui_new(ts_ui_format format, ts_ui_emit emit, void *user, ts_ui **out);
void ts_ui_free(ts_ui *u); /* NULL is a no-op */

/* While quiet, events update the translator's state but no frame is emitted: a resumed
 * stream replays the events before its resume point quietly, so that the frames after it
 * continue the runs and messages the client already has. */
void ts_ui_set_quiet(ts_ui *u, int quiet);

/* Translates one event (its JSON text). TS_E_OK; TS_E_INVAL when the text is not an event
 * object (nothing emitted, the state unchanged); TS_E_NOMEM; TS_E_ABORTED. */
int ts_ui_event(ts_ui *u, const char *json, size_t len);

/* The stream ends here (a finite response): closes an open text message, step and run.
 * A later event starts a new run. */
int ts_ui_finish(ts_ui *u);

#endif /* TS_UI_STREAM_H */
