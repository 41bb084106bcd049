/* exec_log.c: see exec_log.h. */
#include "support/exec_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ts_test_log_append(const char *path, const char *line) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0) _exit(90);
  size_t n = strlen(line);
  if (write(fd, line, n) != (ssize_t)n || fsync(fd) != 0) _exit(91);
  close(fd);
}

void ts_test_log_count(const char *path, const char *thread, int *counts, int n) {
  memset(counts, 0, sizeof(int) * (size_t)n);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char t[64];
  unsigned idx;
  while (fscanf(f, "%63s %u", t, &idx) == 2)
    if (!strcmp(t, thread) && idx < (unsigned)n) counts[idx]++;
  fclose(f);
}

int ts_test_log_total(const char *path, const char *thread) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char t[300];
  unsigned idx;
  int n = 0;
  size_t len = strlen(thread);
  while (fscanf(f, "%299s %u", t, &idx) == 2)
    n += !strncmp(t, thread, len) && (t[len] == '\0' || t[len] == '/');
  fclose(f);
  return n;
}
