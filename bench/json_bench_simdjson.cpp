/*
 * json_bench_simdjson.cpp: simdjson's DOM parser as a peer of json_bench, behind a small
 * C interface (json_bench.c is C; simdjson is C++).
 *
 * simdjson parses a whole document at a time (it has no incremental interface that
 * takes deltas), so json_bench runs it only in the cells where every parser is fed the
 * whole document. It is used as its documentation says: one dom::parser reused for
 * every document (its buffers are allocated once, on the first document), and the input
 * followed by SIMDJSON_PADDING readable bytes so that it need not copy it
 * (realloc_if_needed = false). Like json-c, it builds a tree of the whole document; the
 * correctness pass walks the tree to count tokens the way json_bench's reference scanner
 * does, the timed passes only parse.
 */
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <new>

#include "json_bench_simdjson.h"

struct ts_bench_sj {
  simdjson::dom::parser parser;
};

extern "C" size_t ts_bench_sj_padding(void) { return simdjson::SIMDJSON_PADDING; }

extern "C" const char *ts_bench_sj_describe(void) {
  static char buf[96];
  std::snprintf(buf, sizeof buf, "simdjson %d.%d.%d (%s implementation)",
                int(simdjson::SIMDJSON_VERSION_MAJOR), int(simdjson::SIMDJSON_VERSION_MINOR),
                int(simdjson::SIMDJSON_VERSION_REVISION),
                simdjson::get_active_implementation()->name().c_str());
  return buf;
}

extern "C" ts_bench_sj *ts_bench_sj_new(void) { return new (std::nothrow) ts_bench_sj(); }

extern "C" void ts_bench_sj_free(ts_bench_sj *h) { delete h; }

/* Tokens as the reference scanner counts them: containers twice, keys and scalars once. */
static uint64_t count(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
      uint64_t n = 2;
      for (simdjson::dom::key_value_pair kv : simdjson::dom::object(e)) n += 1 + count(kv.value);
      return n;
    }
    case simdjson::dom::element_type::ARRAY: {
      uint64_t n = 2;
      for (simdjson::dom::element v : simdjson::dom::array(e)) n += count(v);
      return n;
    }
    default: return 1;
  }
}

extern "C" int ts_bench_sj_parse(ts_bench_sj *h, const char *p, size_t n, int verify,
                                 uint64_t *tokens, char *why, size_t cap) {
  simdjson::dom::element doc;
  simdjson::error_code e = h->parser.parse(p, n, false).get(doc);
  if (e) {
    std::snprintf(why, cap, "simdjson: %s", simdjson::error_message(e));
    return 1;
  }
  if (verify) *tokens += count(doc);
  return 0;
}
