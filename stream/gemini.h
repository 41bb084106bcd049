/*
 * gemini.h: the Gemini `streamGenerateContent?alt=sse` stream (GenerateContentResponse
 * chunks), read for the adapter of adapter.h. Internal to the adapter:
 * adapter.c parses each payload and hands it here, and ends the turn at EOF (the
 * only terminal Gemini has); see adapter.h ("Decisions ... gemini").
 */
#ifndef TS_GEMINI_H
#define TS_GEMINI_H

#include "stream/json_view.h"
#include "stream/adapter.h"

/* One parsed chunk: an object, or an array of them (the JSON-array body that
 * streamGenerateContent sends without alt=sse, and error bodies in that shape). */
void ts__gemini_event(ts_adapter *a, ts_jv *jv, ts_view event);

#endif /* TS_GEMINI_H */
