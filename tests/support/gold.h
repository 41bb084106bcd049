/*
 * gold.h: the gold traces of tests/corpus (tests/corpus/README.md has the convention).
 *
 *   NAME.sse              a capture of a provider stream, byte for byte (or NAME.json,
 *                         NAME.ndjson, NAME.html: a plain body the tap also reads)
 *   NAME.events           what `toolstream tap --thread gold ARGS... NAME.sse` prints
 *   NAME.args             ARGS, one argument per line ('#' lines and blank lines are
 *                         skipped); no file: no arguments
 *   NAME.VARIANT.events   another gold of NAME.sse, with its own NAME.VARIANT.args
 *
 * This module only finds and reads the files; tests/events/gold_test.c replays them
 * through the library at every split and tests/cli/tap_cli_test.c through the binary.
 */
#ifndef TS_TEST_GOLD_H
#define TS_TEST_GOLD_H

#include <stddef.h>

/* The thread id every gold is stamped with (the replay's --thread). */
#define TS_TEST_GOLD_THREAD "gold"

#define TS_TEST_GOLD_MAX_ARGS 64

typedef struct {
  char name[256];      /* NAME or NAME.VARIANT */
  char capture[4096];  /* absolute path of NAME.sse (or .json, .ndjson, .html) */
  char events[4096];   /* absolute path of the gold */
  int argc;            /* the arguments of NAME[.VARIANT].args */
  const char *argv[TS_TEST_GOLD_MAX_ARGS + 1]; /* NULL-terminated, point into text */
  char *text;          /* the .args file's bytes (owned) */
} ts_test_gold;

/* Every gold under tests/corpus, sorted by name, in a malloc'd array (*out) the caller
 * frees with ts_test_gold_free. Aborts with a message on a gold without its capture,
 * an .args file without its gold, or an .args line over the limits. */
size_t ts_test_gold_list(ts_test_gold **out);
void ts_test_gold_free(ts_test_gold *g, size_t n);

/* The captures (NAME.sse, .json, .ndjson, .html) that have no NAME.events: written into `missing` (cap bytes,
 * space-separated); returns how many. Every capture must have a gold. */
size_t ts_test_gold_orphans(char *missing, size_t cap);

#endif
