/*
 * file.h: the one whole-file read of toolstream (tools files, JavaScript modules, TLS
 * keys, recorded turns, code from standard input).
 *
 * Every caller names its own limit: a file is configuration or a recorded input, never
 * an unbounded stream, so a file over `max` bytes is refused instead of filling memory.
 */
#ifndef TS_FILE_H
#define TS_FILE_H

#include <stddef.h>

/* Reads `path` whole ("/dev/stdin" reads standard input to its end). On success stores a
 * malloc'd, NUL-terminated copy in *out (the caller frees it; the NUL is not counted in
 * *len) and returns TS_E_OK. On failure *out is untouched and errno tells why, with:
 * TS_E_IO (cannot open or read: errno from the system), TS_E_LIMIT (more than `max`
 * bytes: errno EFBIG), TS_E_NOMEM (errno ENOMEM). */
int ts_file_read(const char *path, size_t max, char **out, size_t *len);

/* The names of the entries of directory `dir` for which keep(name) returns 1 ("." and
 * ".." never), sorted in byte order (strcmp: the same on every machine and locale), at
 * most `max` of them. On success *names is a malloc'd array of *n malloc'd names
 * (ts_file_names_free) and TS_E_OK is returned; on failure nothing is left to free and:
 * TS_E_IO (the directory cannot be read: errno from the system), TS_E_LIMIT (more than
 * `max` names are kept), TS_E_NOMEM. */
int ts_file_list(const char *dir, int (*keep)(const char *name), size_t max, char ***names,
                 size_t *n);
void ts_file_names_free(char **names, size_t n);

#endif /* TS_FILE_H */
