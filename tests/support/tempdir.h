/*
 * tempdir.h: fresh directories and files for tests, and their removal.
 *
 * Every test that touches the file system works in a directory of its own made by
 * ts_test_tempdir (mkdtemp under $TMPDIR, else /tmp) and removes it with ts_test_rm_rf,
 * so tests running side by side (ctest -j) never share a path. Failures of the machinery
 * (no space, no permission) abort the test program with a message: they are not what a
 * test checks.
 */
#ifndef TS_TEST_TEMPDIR_H
#define TS_TEST_TEMPDIR_H

#include <stddef.h>

/* Makes a fresh directory named after `name` (ts-NAME-XXXXXX) and writes its path into
 * buf (cap bytes). Returns buf. */
char *ts_test_tempdir(char *buf, size_t cap, const char *name);

/* Removes `path` and, for a directory, everything below it. Symbolic links are removed,
 * never followed. A path that does not exist is fine. */
void ts_test_rm_rf(const char *path);

/* `dir`/`rel` in one of eight static buffers used in turn (so a few can be live in one
 * expression, as in a call's arguments). */
const char *ts_test_at(const char *dir, const char *rel);

/* Writes `len` bytes to `path` (created or truncated). */
void ts_test_write_file(const char *path, const void *data, size_t len);

/* Writes the NUL-terminated `text` to `path`. */
void ts_test_put(const char *path, const char *text);

#endif
