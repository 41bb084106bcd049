/*
 * attachments.c: copying files between thread filesystems (attachments.h).
 *
 * The threat is a path string written by a model (or a tool it steers) that names
 * something outside the sending thread's filesystem: "../../etc/passwd", an absolute
 * host path, or an innocent-looking name that is a symbolic link a tool planted. String
 * checks alone cannot stop the last one (the link's target is only known to the
 * filesystem, and can change between a check and a use), so the path is walked with
 * openat() one component at a time from a descriptor of the root, every component opened
 * with O_NOFOLLOW: the kernel refuses a link at the moment we open it, with nothing to
 * race. The string checks come first anyway, so that a `..` is reported as what it is.
 *
 * The copy is made durable before its name exists: bytes to a temporary file, fsync,
 * link() to the final name (which fails instead of replacing a file another copy just
 * took, so names are unique without a lock), unlink the temporary, fsync the directory.
 * The reference handed to the receiver is written only after that.
 */
#include "agent/attachments.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/strbuf.h"

/* The bytes read per read(): big enough that a 32 MiB file is a few thousand calls. */
#define COPY_CHUNK 16384
/* How many "stem-N.ext" names are tried before giving up. */
#define NAME_TRIES 10000

static int say(int code, char *why, size_t cap, const char *p, size_t len, const char *what) {
  if (why && cap) {
    char q[256];
    ts_str_quote(q, sizeof q, p, len, 200);
    snprintf(why, cap, "attachment \"%s\": %s", q, what ? what : ts_err_message(code));
  }
  return code;
}

int ts_attach_path_check(const char *p, size_t len) {
  if (!p || !len || len > TS_ATTACH_PATH_MAX) return TS_E_ATTACH_PATH;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c < 0x20 || c == 0x7f) return TS_E_ATTACH_PATH; /* NUL, newline, ... */
  }
  size_t i = p[0] == '/' ? 1 : 0; /* one leading '/': the thread's root */
  if (i == len) return TS_E_ATTACH_PATH;
  while (i < len) {
    size_t j = i;
    while (j < len && p[j] != '/') j++;
    size_t n = j - i;
    if (n == 0 || (n == 1 && p[i] == '.') || (n == 2 && p[i] == '.' && p[i + 1] == '.'))
      return TS_E_ATTACH_PATH;
    if (j == len - 1) return TS_E_ATTACH_PATH; /* a trailing '/' names a directory */
    i = j + 1;
  }
  return 0;
}

/* Why opening component `name` under `dir` failed with errno `e`: a link, a missing
 * file (also a file where a directory was needed: the path names nothing), or something
 * that is not a regular file. */
static int open_error(int dir, const char *name, int e, int last) {
  struct stat st;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) return TS_E_ATTACH_ESCAPE;
    if (!last && !S_ISDIR(st.st_mode)) return TS_E_ATTACH_MISSING;
    if (last) return TS_E_ATTACH_NOT_FILE;
  }
  if (e == ENOENT || e == ENOTDIR) return TS_E_ATTACH_MISSING;
  if (e == ELOOP) return TS_E_ATTACH_ESCAPE;
  return TS_E_IO;
}

int ts_attach_open(const char *root, const char *path, size_t len, int *fd_out,
                   uint64_t *size_out, char *why, size_t cap) {
  if (!root || !fd_out) return TS_E_INVAL;
  int rc = ts_attach_path_check(path, len);
  if (rc) return say(rc, why, cap, path ? path : "", path ? len : 0, NULL);
  int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return say(TS_E_IO, why, cap, path, len, "the thread's filesystem cannot be opened");
  char comp[TS_ATTACH_PATH_MAX + 1];
  size_t i = path[0] == '/' ? 1 : 0;
  for (;;) {
    size_t j = i;
    while (j < len && path[j] != '/') j++;
    memcpy(comp, path + i, j - i);
    comp[j - i] = '\0';
    int last = j == len;
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
    int fd = openat(dir, comp, flags);
    if (fd < 0) {
      rc = open_error(dir, comp, errno, last);
      close(dir);
      return say(rc, why, cap, path, len, NULL);
    }
    close(dir);
    if (last) {
      struct stat st;
      if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return say(TS_E_ATTACH_NOT_FILE, why, cap, path, len, NULL);
      }
      int fl = fcntl(fd, F_GETFL);
      if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
      *fd_out = fd;
      if (size_out) *size_out = (uint64_t)st.st_size;
      return 0;
    }
    dir = fd;
    i = j + 1;
  }
}

/* The copy's name from the source's last component (see attachments.h). */
static void safe_name(const char *path, size_t len, char *out) {
  size_t s = len;
  while (s > 0 && path[s - 1] != '/') s--;
  size_t o = 0;
  for (size_t i = s; i < len && o < TS_ATTACH_NAME_MAX; i++) {
    char c = path[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || (c == '.' && o > 0);
    out[o++] = ok ? c : '_';
  }
  out[o] = '\0';
}

/* Candidate `k` (1: the name itself; then stem-k.ext). */
static void candidate(const char *name, unsigned k, char *out, size_t cap) {
  if (k == 1) {
    snprintf(out, cap, "%s", name);
    return;
  }
  const char *dot = strrchr(name, '.');
  if (!dot || dot == name) dot = name + strlen(name);
  snprintf(out, cap, "%.*s-%u%s", (int)(dot - name), name, k, dot);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, n -= (size_t)w;
  }
  return 0;
}

int ts_attach_copy(const char *from_root, const char *path, size_t len, const char *to_root,
                   ts_attach_batch *batch, char *out, size_t out_cap, char *why, size_t cap) {
  if (!from_root || !to_root || !out || !out_cap) return TS_E_INVAL;
  ts_attach_batch one = {0};
  ts_attach_batch *b = batch ? batch : &one;
  uint64_t file_max = b->limits.file_max ? b->limits.file_max : TS_ATTACH_FILE_MAX;
  uint64_t total_max = b->limits.total_max ? b->limits.total_max : TS_ATTACH_TOTAL_MAX;
  uint32_t files_max = b->limits.files_max ? b->limits.files_max : TS_ATTACH_FILES_MAX;
  if (b->files >= files_max)
    return say(TS_E_LIMIT, why, cap, path ? path : "", path ? len : 0,
               "more attachments than the limit in one message");
  int src = -1;
  uint64_t size = 0;
  int rc = ts_attach_open(from_root, path, len, &src, &size, why, cap);
  if (rc) return rc;
  if (size > file_max) {
    close(src);
    return say(TS_E_ATTACH_TOO_BIG, why, cap, path, len, NULL);
  }
  if (b->bytes + size > total_max) {
    close(src);
    return say(TS_E_LIMIT, why, cap, path, len, "the message's attachments exceed the size limit");
  }
  int root = open(to_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    close(src);
    return say(TS_E_IO, why, cap, path, len, "the receiver's filesystem cannot be opened");
  }
  if (mkdirat(root, TS_ATTACH_DIR, 0755) && errno != EEXIST) rc = TS_E_IO;
  int dir = rc ? -1 : openat(root, TS_ATTACH_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (!rc && dir < 0) rc = errno == ELOOP || errno == ENOTDIR ? TS_E_ATTACH_ESCAPE : TS_E_IO;
  close(root);
  if (rc) {
    close(src);
    return say(rc, why, cap, path, len,
               rc == TS_E_ATTACH_ESCAPE ? "the receiver's attachments directory is a link "
                                          "or not a directory"
                                        : "the receiver's attachments directory cannot be made");
  }
  /* the bytes, under a temporary name */
  char tmp[64];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  snprintf(tmp, sizeof tmp, ".tmp-%ld-%ld-%d", (long)getpid(), (long)now.tv_nsec, rand());
  int dst = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (dst < 0) {
    close(src), close(dir);
    return say(TS_E_IO, why, cap, path, len, "cannot create the copy");
  }
  char buf[COPY_CHUNK];
  uint64_t copied = 0;
  for (;;) {
    ssize_t r = read(src, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      rc = say(TS_E_IO, why, cap, path, len, "read failed");
      break;
    }
    if (r == 0) break;
    copied += (uint64_t)r;
    if (copied > file_max) { /* it grew while we read it */
      rc = say(TS_E_ATTACH_TOO_BIG, why, cap, path, len, NULL);
      break;
    }
    if (b->bytes + copied > total_max) {
      rc = say(TS_E_LIMIT, why, cap, path, len, "the message's attachments exceed the size limit");
      break;
    }
    if (write_all(dst, buf, (size_t)r)) {
      rc = say(TS_E_IO, why, cap, path, len, "write failed (disk full?)");
      break;
    }
  }
  close(src);
  if (!rc && fsync(dst)) rc = say(TS_E_IO, why, cap, path, len, "fsync failed");
  close(dst);
  /* the name: the first free candidate; link() never replaces a file */
  char name[TS_ATTACH_NAME_MAX + 1], cand[TS_ATTACH_NAME_MAX + 24];
  safe_name(path, len, name);
  unsigned k = 1;
  for (; !rc && k <= NAME_TRIES; k++) {
    candidate(name, k, cand, sizeof cand);
    if (linkat(dir, tmp, dir, cand, 0) == 0) break;
    if (errno != EEXIST) rc = say(TS_E_IO, why, cap, path, len, "cannot name the copy");
  }
  if (!rc && k > NAME_TRIES) rc = say(TS_E_LIMIT, why, cap, path, len, "no free name for the copy");
  unlinkat(dir, tmp, 0);
  if (!rc && fsync(dir)) {
    unlinkat(dir, cand, 0);
    rc = say(TS_E_IO, why, cap, path, len, "fsync of the directory failed");
  }
  close(dir);
  if (rc) return rc;
  if ((size_t)snprintf(out, out_cap, "/%s/%s", TS_ATTACH_DIR, cand) >= out_cap) return TS_E_LIMIT;
  b->bytes += copied;
  b->files++;
  return 0;
}

static int path_byte(char ch) { /* a byte of a copy's name */
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '-' || ch == '.';
}

/* ---- references in a text -------------------------------------------------------- */

void ts_attach_translate(const char *text, size_t len, const char *from_root,
                         const char *to_root, ts_buf *out, ts_buf *list) {
  static const char pre[] = "/" TS_ATTACH_DIR "/";
  ts_buf t;
  ts_buf_init(&t, len * 2 + 4096);
  ts_attach_batch batch = {0};
  size_t i = 0;
  while (i < len) {
    const char *hit = NULL;
    if (from_root && to_root && len - i >= sizeof pre - 1)
      for (size_t k = i; k + sizeof pre - 1 <= len; k++)
        if (!memcmp(text + k, pre, sizeof pre - 1)) {
          hit = text + k;
          break;
        }
    if (!hit) {
      ts_buf_append(&t, text + i, len - i);
      break;
    }
    size_t at = (size_t)(hit - text), end = at + sizeof pre - 1;
    while (end < len && path_byte(text[end])) end++;
    while (end > at + sizeof pre - 1 && text[end - 1] == '.') end--; /* a sentence's stop */
    ts_buf_append(&t, text + i, at - i);
    char ref[TS_ATTACH_PATH_MAX], why[256];
    if (end > at + sizeof pre - 1 &&
        ts_attach_copy(from_root, text + at, end - at, to_root, &batch, ref, sizeof ref, why,
                       sizeof why) == 0) {
      ts_buf_puts(&t, ref);
      if (list->len) ts_buf_putc(list, ',');
      ts_buf_append_json_string(list, ref, strlen(ref));
    } else {
      ts_buf_append(&t, text + at, end - at);
    }
    i = end;
  }
  ts_buf_append_json_string(out, t.p ? t.p : "", t.len);
  ts_buf_fini(&t);
}
