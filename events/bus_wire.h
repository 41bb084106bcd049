/*
 * bus_wire.h: the bytes of the event bus, shared by the publisher (bus_pub) and the
 * subscriber (bus_sub). docs/bus.md is the full description; in short:
 *
 *   live message (pub0):   <thread> ' ' <event JSON>
 *   replay request (req0): "get <after_seq> <thread>"  |  "threads"
 *   replay answer (rep0):  "ok <count> <newest>\n" then <count> lines "<seq> <json>\n"
 *                          "gone <oldest> <newest>\n"
 *                          "unknown\n"
 *                          "threads <count>\n" then <count> lines "<oldest> <newest> <thread>\n"
 *                          "error <message>\n"
 *
 * Thread ids follow base/thread_id.h.
 *
 * This module is plain byte handling (no nng, no allocation); both sides find their
 * threads through base/hmap.h.
 */
#ifndef TS_BUS_WIRE_H
#define TS_BUS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "base/hmap.h"
#include "base/thread_id.h"

/* The byte between the thread id and the JSON in a live message. */
#define TS_BUS_SEP ' '

/* Splits a live message into its thread id and its JSON. Returns 0, or TS_E_INVAL when
 * there is no separator or the thread id is invalid. The views point into `msg`. */
int ts_bus_wire_split(const char *msg, size_t len, const char **thread, size_t *thread_len,
                      const char **json, size_t *json_len);

/* Reads the top-level "seq" member of an event's JSON object: the bytes are walked with
 * string and nesting awareness, so a "seq" key inside `arguments` or text inside a
 * string never counts. Returns 0 and stores the value, or TS_E_INVAL when there is no
 * top-level "seq" with a plain unsigned integer value (at most 20 digits, no overflow). */
int ts_bus_json_seq(const char *json, size_t len, uint64_t *seq);

/* Parses a decimal uint64 at *p (< end), advancing *p past the digits. Returns 0 or
 * TS_E_INVAL (no digit, more than 20 digits, or overflow). */
int ts_bus_parse_u64(const char **p, const char *end, uint64_t *out);

/* ---- internal: the per-thread nodes bus_pub and bus_sub keep in a base/hmap.h map,
 * keyed (SipHash under a random key) by thread ids that clients choose */

typedef struct ts__bus_node {
  ts_hmap_node h; /* first: a node found in the map is its ts__bus_node */
  size_t klen;
  char key[TS_THREAD_ID_MAX + 1]; /* NUL-terminated copy of the id */
} ts__bus_node;

/* Copies the key (klen <= TS_THREAD_ID_MAX, else TS_E_INVAL) into the node and links it
 * into m. Returns 0 or TS_E_NOMEM (the node is then not linked). */
int ts__bus_node_link(ts_hmap *m, ts__bus_node *node, const char *key, size_t klen);

#endif /* TS_BUS_WIRE_H */
