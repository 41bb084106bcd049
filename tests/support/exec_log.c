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
