/*
 * exec_log.h: the durable execution log of the crash tests.
 *
 * A crash test's tools write one line per execution ("THREAD INDEX") before they return,
 * and fsync it, so a SIGKILL an instant later cannot lose it: the parent then counts what
 * really ran against what the store says. The same file tells the parent when the k-th
 * execution has happened (a kill point read from the child, not guessed from a sleep).
 * Failures of the machinery end the (child) process with _exit(90) or _exit(91).
 */
#ifndef TS_TEST_EXEC_LOG_H
#define TS_TEST_EXEC_LOG_H

/* Appends `line` to `path` (created 0600) and fsyncs it. */
void ts_test_log_append(const char *path, const char *line);

/* counts[i] = how many lines "THREAD i" `path` holds, for i < n (0 when there is no file). */
void ts_test_log_count(const char *path, const char *thread, int *counts, int n);

/* How many lines `path` holds for `thread` and for every thread below it in the tree (ids
 * "THREAD/..."): the executions of a whole tree. */
int ts_test_log_total(const char *path, const char *thread);

#endif /* TS_TEST_EXEC_LOG_H */
