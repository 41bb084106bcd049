/*
 * gemini.h: the Gemini `streamGenerateContent?alt=sse` stream (GenerateContentResponse
 * chunks), read for the adapter of model_stream.h. Internal to the adapter:
 * model_stream.c parses each payload and hands it here, and ends the turn at EOF (the
 * only terminal Gemini has); see model_stream.h ("Decisions ... gemini").
 */
#ifndef TS_GEMINI_H
#define TS_GEMINI_H

#include "stream/json_view.h"
#include "stream/model_stream.h"

/* One parsed chunk: an object, or an array of them (the JSON-array body that
 * streamGenerateContent sends without alt=sse, and error bodies in that shape). */
void ts__gemini_event(ts_ms *a, ts_jv *jv, ts_view event);

#endif /* TS_GEMINI_H */
