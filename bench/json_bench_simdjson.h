/* json_bench_simdjson.h: the C interface of the simdjson peer (json_bench_simdjson.cpp). */
#ifndef TS_JSON_BENCH_SIMDJSON_H
#define TS_JSON_BENCH_SIMDJSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_bench_sj ts_bench_sj;

/* Bytes that must be readable after a document passed to ts_bench_sj_parse. */
size_t ts_bench_sj_padding(void);
/* "simdjson VERSION (implementation)", a static string. */
const char *ts_bench_sj_describe(void);
/* A parser for any number of documents, one after another; NULL when out of memory. */
ts_bench_sj *ts_bench_sj_new(void);
void ts_bench_sj_free(ts_bench_sj *h);
/* Parses the whole document [p, p + n) (padding readable after it). With verify, adds
 * its tokens (containers twice, keys and scalars once) to *tokens. Returns 0, or 1
 * with a message in why. */
int ts_bench_sj_parse(ts_bench_sj *h, const char *p, size_t n, int verify, uint64_t *tokens,
                      char *why, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* TS_JSON_BENCH_SIMDJSON_H */
