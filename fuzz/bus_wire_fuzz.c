/*
 * bus_wire_fuzz.c: the event bus's wire decoder (events/bus_wire.h) on hostile bytes.
 *
 * A live message is split into its thread id and JSON, and the top-level "seq" is read;
 * a replay answer's numbers are parsed. Nothing may read outside the message, and what
 * the decoder accepts must satisfy the rules it promises: a valid thread id, a JSON view
 * inside the message, a seq whose digits stand at the top level of the object.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/thread_id.h"
#include "events/bus_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size heap copy, so that ASan catches any read past the end. */
  char *msg = malloc(size ? size : 1);
  memcpy(msg, data, size);
  const char *th, *json;
  size_t thl, jl;
  if (ts_bus_wire_split(msg, size, &th, &thl, &json, &jl) == 0) {
    if (th != msg || !ts_thread_id_valid(th, thl) || json != msg + thl + 1 || thl + 1 + jl != size)
      abort();
    uint64_t seq;
    (void)ts_bus_json_seq(json, jl, &seq);
  }
  uint64_t seq;
  (void)ts_bus_json_seq(msg, size, &seq);
  const char *p = msg;
  uint64_t v;
  while (p < msg + size) {
    if (ts_bus_parse_u64(&p, msg + size, &v)) p++;
    if (p > msg + size) abort();
  }
  free(msg);
  return 0;
}
