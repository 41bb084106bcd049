/*
 * demo_tools.c: see demo_tools.h. Confinement is checked twice: lexically (no absolute
 * paths but the attachment convention's /attachments/..., no `..`) and physically (the real path of the deepest existing ancestor must lie
 * inside the workspace's real path, which defeats symbolic links planted inside it).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "tools/demo_tools.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream/json_view.h"
#include "base/strbuf.h"

#define READ_MAX (1u << 20)

struct ts_demo_tools {
  char root[PATH_MAX]; /* the workspace's real path */
};

/* Reads string member `key` of the arguments object into a malloc'd NUL-terminated copy. */
static char *arg_str(const char *args, size_t len, const char *key, size_t *out_len) {
  char *js = malloc(len + 1);
  if (!js) return NULL;
  memcpy(js, args, len);
  js[len] = '\0';
  ts_jv v;
  char *res = NULL;
  if (ts_jv_init(&v, (int)(len / 2 + 8)) == TS_E_OK && ts_jv_parse(&v, js, len) == TS_E_OK) {
    int i = ts_jv_get(&v, 0, key);
    ts_view s;
    if (i >= 0 && ts_jv_type_of(&v, i) == TS_JV_STRING && ts_jv_str(&v, i, &s) == TS_E_OK) {
      res = malloc(s.len + 1);
      if (res) {
        memcpy(res, s.p, s.len);
        res[s.len] = '\0';
        if (out_len) *out_len = s.len;
      }
    }
  }
  ts_jv_fini(&v);
  free(js);
  return res;
}

/* The root a call works in: the calling thread's filesystem when the dispatcher names one
 * (a child thread's own: ts_call_info.workspace), else the workspace given at setup. */
static const char *root_of(const ts_demo_tools *d, const ts_call_info *call, char *buf) {
  if (call && call->workspace && *call->workspace)
    return realpath(call->workspace, buf) ? buf : NULL;
  return d->root;
}

/* Resolves `rel` inside the workspace `root` into `full`; returns NULL on success or a
 * reason. */
static const char *confine(const char *root, const char *rel, char *full, size_t cap) {
  if (!root) return "the thread's workspace cannot be resolved";
  if (!rel[0]) rel = ".";
  /* "/attachments/NAME" is how a thread is handed a file (tools-spec §6: the leading '/'
   * is the thread's own root, agent/attachments.h), so that one root-relative directory is
   * read inside the workspace; any other absolute path is still refused. */
  if (!strncmp(rel, "/attachments/", 13)) rel++;
  if (rel[0] == '/') return "absolute paths are not allowed; give a path inside the workspace";
  if (strlen(rel) > 1024) return "path too long";
  const char *p = rel;
  while (*p) { /* lexical: no ".." component */
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') return "paths may not contain \"..\"";
    p += n;
    while (*p == '/') p++;
  }
  if ((size_t)snprintf(full, cap, "%s/%s", root, rel) >= cap) return "path too long";
  /* physical: the deepest existing ancestor must resolve inside the root */
  char probe[PATH_MAX], real[PATH_MAX];
  snprintf(probe, sizeof probe, "%s", full);
  for (;;) {
    if (realpath(probe, real)) break;
    char *slash = strrchr(probe, '/');
    if (!slash || slash == probe) return "cannot resolve the path";
    *slash = '\0';
  }
  size_t rl = strlen(root);
  if (strncmp(real, root, rl) != 0 || (real[rl] != '\0' && real[rl] != '/'))
    return "the path leads outside the workspace";
  return NULL;
}

static int mkdirs(char *path) { /* creates the parents of `path` */
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int r = mkdir(path, 0755);
    *p = '/';
    if (r && errno != EEXIST) return -1;
  }
  return 0;
}

static void write_file(void *user, const ts_call_info *call, const char *args, size_t len,
                       ts_tool_result *out) {
  ts_demo_tools *d = user;
  char rootbuf[PATH_MAX];
  const char *root = root_of(d, call, rootbuf);
  size_t clen = 0;
  char *path = arg_str(args, len, "path", NULL), *content = arg_str(args, len, "content", &clen);
  char full[PATH_MAX], tmp[PATH_MAX + 32];
  const char *why;
  if (!path || !content) {
    ts_tool_result_error(out, "write_file needs string arguments \"path\" and \"content\"");
  } else if ((why = confine(root, path, full, sizeof full))) {
    ts_tool_result_error(out, "%s: %s", path, why);
  } else if (mkdirs(full) || confine(root, path, full, sizeof full)) {
    ts_tool_result_error(out, "%s: cannot create its directory: %s", path, strerror(errno));
  } else {
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", full, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    size_t off = 0;
    while (fd >= 0 && off < clen) {
      ssize_t w = write(fd, content + off, clen - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += (size_t)w;
    }
    if (fd < 0 || off != clen || fsync(fd) != 0 || close(fd) != 0 || rename(tmp, full) != 0) {
      int e = errno;
      if (fd >= 0) unlink(tmp);
      ts_tool_result_error(out, "%s: cannot write: %s", path, strerror(e));
    } else {
      char res[256];
      ts_buf b;
      ts_buf_init(&b, 4096);
      ts_buf_puts(&b, "{\"path\":");
      ts_buf_append_json_string(&b, path, strlen(path));
      snprintf(res, sizeof res, ",\"bytes\":%zu}", clen);
      ts_buf_puts(&b, res);
      ts_tool_result_json(out, b.p, b.len);
      ts_buf_fini(&b);
    }
  }
  free(path);
  free(content);
}

static void read_file(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  ts_demo_tools *d = user;
  char rootbuf[PATH_MAX];
  const char *root = root_of(d, call, rootbuf);
  char *path = arg_str(args, len, "path", NULL);
  char full[PATH_MAX];
  const char *why;
  if (!path) {
    ts_tool_result_error(out, "read_file needs a string argument \"path\"");
  } else if ((why = confine(root, path, full, sizeof full))) {
    ts_tool_result_error(out, "%s: %s", path, why);
  } else {
    int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char *buf = fd >= 0 ? malloc(READ_MAX + 1) : NULL;
    ssize_t n = buf ? read(fd, buf, READ_MAX + 1) : -1;
    if (n < 0) {
      ts_tool_result_error(out, "%s: cannot read: %s", path, strerror(errno));
    } else if ((size_t)n > READ_MAX) {
      ts_tool_result_error(out, "%s: larger than %u bytes", path, READ_MAX);
    } else {
      ts_tool_result_string(out, buf, (size_t)n);
    }
    free(buf);
    if (fd >= 0) close(fd);
  }
  free(path);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_dir(void *user, const ts_call_info *call, const char *args, size_t len,
                     ts_tool_result *out) {
  ts_demo_tools *d = user;
  char rootbuf[PATH_MAX];
  const char *root = root_of(d, call, rootbuf);
  char *path = arg_str(args, len, "path", NULL);
  char full[PATH_MAX];
  const char *why = confine(root, path ? path : ".", full, sizeof full);
  DIR *dir = why ? NULL : opendir(full);
  if (why) {
    ts_tool_result_error(out, "%s: %s", path ? path : ".", why);
  } else if (!dir) {
    ts_tool_result_error(out, "%s: cannot list: %s", path ? path : ".", strerror(errno));
  } else {
    char *names[4096];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) && n < 4096) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      names[n] = strdup(e->d_name);
      if (names[n]) n++;
    }
    closedir(dir);
    qsort(names, n, sizeof names[0], cmp_str);
    ts_buf b;
    ts_buf_init(&b, 1 << 22);
    ts_buf_putc(&b, '[');
    for (size_t i = 0; i < n; i++) {
      if (i) ts_buf_putc(&b, ',');
      ts_buf_append_json_string(&b, names[i], strlen(names[i]));
      free(names[i]);
    }
    ts_buf_putc(&b, ']');
    ts_tool_result_json(out, b.p, b.len);
    ts_buf_fini(&b);
  }
  free(path);
}

int ts_demo_tools_add(ts_registry *reg, const char *workspace, ts_demo_tools **out, char *why,
                      size_t why_cap) {
  *out = NULL;
  ts_demo_tools *d = calloc(1, sizeof *d);
  if (!d) return TS_E_NOMEM;
  if (!realpath(workspace, d->root)) {
    snprintf(why, why_cap, "workspace %s: %s", workspace, strerror(errno));
    free(d);
    return TS_E_INVAL;
  }
  static const char *write_schema =
      "{\"type\":\"object\",\"properties\":{\"description\":{\"type\":\"string\","
      "\"description\":\"e.g. writing index.html\"},\"path\":{\"type\":\"string\"},"
      "\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"content\"]}";
  static const char *path_schema =
      "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}";
  ts_tool_spec specs[] = {
      {.name = "write_file", .description = "Write a file to the workspace",
       .args_schema = write_schema, .progress_arg = "description", .idempotent = 1,
       .execute = write_file, .user = d},
      {.name = "read_file", .description = "Read a file of the workspace",
       .args_schema = path_schema, .idempotent = 1, .execute = read_file, .user = d},
      {.name = "list_dir", .description = "List a directory of the workspace",
       .args_schema = path_schema, .idempotent = 1, .execute = list_dir, .user = d},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    int rc = ts_registry_add(reg, &specs[i], why, why_cap);
    if (rc) {
      free(d);
      return rc;
    }
  }
  *out = d;
  return TS_E_OK;
}

void ts_demo_tools_free(ts_demo_tools *d) { free(d); }
