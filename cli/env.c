/*
 * env.c: `toolstream env`: a thread's environment of variables (docs/variables.md).
 *
 *   env set THREAD NAME     the value from standard input (a terminal: a prompt with echo
 *                           off), never from the command line, where `ps` would show it
 *   env unset THREAD NAME
 *   env list THREAD         every name the thread declares, holds, inherits or waits for:
 *                           type, where the value comes from, text values; secrets as ••••
 *
 * A `set` is one committed write to the store; a run waiting for that variable in
 * another process sees the commit and goes on (the dispatcher polls the store). The
 * value read is wiped from memory once stored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/thread_id.h"
#include "cli/cli.h"
#include "store/store.h"
#include "tools/variables.h"

enum { O_DATA_DIR = 1, O_JSON, O_SECRET, O_TEXT };

static const ts_cli_opt env_opts[] = {
    {"secret", 0, TS_CLI_FLAG, O_SECRET, 0, 0, NULL,
     "set: seal the value at rest (libsodium; key file DIR/secret.key,\n"
     "0600, or $TOOLSTREAM_SECRET_KEY)", NULL},
    {"text", 0, TS_CLI_FLAG, O_TEXT, 0, 0, NULL,
     "set: store the value as text (default: secret when a tool\n"
     "declares the name secret on the thread or an ancestor)", NULL},
    {"json", 0, TS_CLI_FLAG, O_JSON, 0, 0, NULL, "list: a JSON array instead of a table", NULL},
    {"data-dir", 0, TS_CLI_STRING, O_DATA_DIR, 0, 0, "DIR",
     "where the store lives (default $TOOLSTREAM_DATA_DIR,\n"
     "$XDG_DATA_HOME/toolstream, ~/.local/share/toolstream)", NULL},
};
static const ts_cli_group env_group = {"env", NULL, env_opts,
                                       sizeof env_opts / sizeof env_opts[0], NULL};
static const ts_cli_group *const env_groups[] = {&env_group, NULL};

const ts_cli_command ts_cli_cmd_env = {
    "env",
    "set THREAD NAME | unset THREAD NAME | list THREAD [options]",
    "a thread's variables: env set THREAD NAME (value from stdin), unset, list",
    "A thread's environment: the values its tools' variables resolve to (the thread's\n"
    "own value wins, then one inherited from its parent, up the tree; docs/variables.md).\n"
    "  set     reads the value from standard input (one line from a terminal, asked for\n"
    "          with echo off; else all of it, one trailing newline dropped). A value is\n"
    "          never taken from the command line. A run waiting for it wakes.\n"
    "  unset   removes the thread's own value (an inherited one may then show through)\n"
    "  list    every name declared, set, inherited or waited for on the thread: its type,\n"
    "          where the value comes from, and the value (secrets as ••••)",
    env_groups,
    "Exit status: 0 done; 1 an error (one line on standard error, never a value); 2 usage.",
    ts_cli_env,
};

typedef struct {
  const char *data_dir, *pos[3];
  int npos, json, type;
} env_args;

static int env_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  env_args *a = user;
  (void)n;
  if (!o) {
    if (a->npos == 3) {
      fprintf(stderr, "toolstream env: too many arguments (a value is read from standard "
                      "input, never given here; try --help)\n");
      return 2;
    }
    a->pos[a->npos++] = val;
    return 0;
  }
  switch (o->id) {
    case O_DATA_DIR: a->data_dir = val; break;
    case O_JSON: a->json = 1; break;
    case O_SECRET: a->type = TS_VAR_SECRET; break;
    case O_TEXT: a->type = TS_VAR_TEXT; break;
  }
  return 0;
}

#define VALUE_MAX ((size_t)64 << 10)

/* Reads the value: a terminal gets a prompt with echo off; else all of stdin. Returns a
 * malloc'd NUL-terminated buffer of *len bytes (the caller wipes it), or NULL after
 * printing why. */
static char *read_value(const char *name, int secret, size_t *len) {
  char *buf = malloc(VALUE_MAX + 2);
  if (!buf) {
    fprintf(stderr, "toolstream env: out of memory\n");
    return NULL;
  }
  size_t n = 0;
  if (isatty(STDIN_FILENO)) {
    struct termios old, quiet;
    int have = tcgetattr(STDIN_FILENO, &old) == 0;
    fprintf(stderr, "%s (%s): ", name, secret ? "secret, not echoed" : "text, not echoed");
    fflush(stderr);
    if (have) {
      quiet = old;
      quiet.c_lflag &= ~(tcflag_t)ECHO;
      tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    int c;
    while (n <= VALUE_MAX && (c = getchar()) != EOF && c != '\n') buf[n++] = (char)c;
    if (have) tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    fputc('\n', stderr);
  } else {
    size_t got;
    while (n <= VALUE_MAX && (got = fread(buf + n, 1, VALUE_MAX + 1 - n, stdin)) > 0) n += got;
    if (ferror(stdin)) {
      ts_vars_wipe(buf, n);
      free(buf);
      fprintf(stderr, "toolstream env: cannot read standard input: %s\n", strerror(errno));
      return NULL;
    }
    if (n && buf[n - 1] == '\n') n--;
    if (n && buf[n - 1] == '\r') n--;
  }
  if (n > VALUE_MAX) {
    ts_vars_wipe(buf, n);
    free(buf);
    fprintf(stderr, "toolstream env: the value is longer than %zu bytes\n", VALUE_MAX);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* ---- list ---------------------------------------------------------------------------- */

typedef struct {
  char name[TS_STORE_VAR_NAME_MAX + 1];
  int declared, type, required, scoped, waiting;
  char declared_by[300], description[512];
} entry;

typedef struct {
  entry *v;
  size_t n, cap;
  int oom;
} entries;

static entry *entry_for(entries *e, const char *name) {
  for (size_t i = 0; i < e->n; i++)
    if (!strcmp(e->v[i].name, name)) return &e->v[i];
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 16;
    entry *v = realloc(e->v, cap * sizeof *v);
    if (!v) {
      e->oom = 1;
      return NULL;
    }
    e->v = v;
    e->cap = cap;
  }
  entry *x = &e->v[e->n++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  return x;
}

static int add_decl(void *user, const ts_store_env_decl *d) {
  entry *x = entry_for(user, d->name);
  if (!x) return 1;
  if (!x->declared) { /* the thread's own declaration first; an ancestor's if none */
    x->declared = 1;
    x->type = d->type;
    x->required = d->required;
    x->scoped = d->scoped;
    snprintf(x->declared_by, sizeof x->declared_by, "%s", d->declared_by);
    snprintf(x->description, sizeof x->description, "%s", d->description);
  }
  return 0;
}

static int add_value(void *user, const ts_store_env_value *v) {
  return entry_for(user, v->name) ? 0 : 1;
}

static int add_wait(void *user, const ts_store_parked *p) {
  entry *x = entry_for(user, p->variable);
  if (!x) return 1;
  x->waiting = 1;
  return 0;
}

static int grab_parent(void *user, const ts_store_thread *t) {
  snprintf(user, 300, "%s", t->parent ? t->parent : "");
  return 0;
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static int env_list(ts_store *s, const char *thread, int json) {
  entries e = {0};
  /* names: declared or held on the thread, held by an ancestor, or waited for */
  char t[300];
  snprintf(t, sizeof t, "%s", thread);
  int r = 0;
  for (int level = 0; level < 256 && t[0] && r >= 0; level++) {
    if ((r = ts_store_env_decls(s, t, add_decl, &e)) < 0) break;
    if ((r = ts_store_env_list(s, t, add_value, &e)) < 0) break;
    char parent[300] = "";
    if ((r = ts_store_thread_get(s, t, grab_parent, parent)) < 0) break;
    snprintf(t, sizeof t, "%s", parent);
  }
  if (r >= 0) r = ts_store_parked_calls(s, thread, add_wait, &e);
  if (r < 0 || e.oom) {
    fprintf(stderr, "toolstream env: %s\n", e.oom ? "out of memory" : ts_store_errmsg(s));
    free(e.v);
    return 1;
  }
  qsort(e.v, e.n, sizeof *e.v, cmp_entry);
  ts_vars *vars = NULL;
  if (ts_vars_open(s, NULL, &vars)) {
    free(e.v);
    return 1;
  }
  ts_buf out;
  ts_buf_init(&out, (size_t)64 << 20);
  if (json) ts_buf_putc(&out, '[');
  else if (e.n)
    ts_buf_puts(&out, "NAME                      TYPE    VALUE                 FROM\n");
  int rc = 0;
  for (size_t i = 0; i < e.n; i++) {
    entry *x = &e.v[i];
    ts_var_def def = {x->name, x->declared ? (ts_var_type)x->type : TS_VAR_TEXT, x->required,
                      x->scoped, x->description};
    ts_var_value val;
    if (ts_vars_locate(vars, thread, &def, NULL, &val)) {
      fprintf(stderr, "toolstream env: %s\n", ts_vars_errmsg(vars));
      rc = 1;
      break;
    }
    int found = val.source != TS_VAR_FROM_NONE;
    int secret = found ? val.stored_type == TS_VAR_SECRET : def.type == TS_VAR_SECRET;
    char from[400];
    if (!found)
      snprintf(from, sizeof from, "%s%s", x->waiting ? "missing: a call waits for it"
                                          : x->required ? "missing (required)" : "unset",
               val.blocked ? "; an ancestor's value is not inherited (scoped)" : "");
    else if (val.source == TS_VAR_FROM_THREAD)
      snprintf(from, sizeof from, "this thread");
    else
      snprintf(from, sizeof from, "inherited from %s", val.from_thread);
    if (json) {
      if (i) ts_buf_putc(&out, ',');
      ts_buf_puts(&out, "{\"name\":");
      ts_buf_append_json_string(&out, x->name, strlen(x->name));
      ts_buf_puts(&out, secret ? ",\"type\":\"secret\"" : ",\"type\":\"text\"");
      ts_buf_puts(&out, ",\"source\":");
      const char *src = ts_var_source_name(val.source);
      ts_buf_append_json_string(&out, src, strlen(src));
      if (found) {
        ts_buf_puts(&out, ",\"thread\":");
        ts_buf_append_json_string(&out, val.from_thread, strlen(val.from_thread));
      }
      if (found && !secret) {
        ts_buf_puts(&out, ",\"value\":");
        ts_buf_append_json_string(&out, val.value ? val.value : "", val.len);
      }
      ts_buf_puts(&out, x->waiting ? ",\"waiting\":true" : ",\"waiting\":false");
      ts_buf_puts(&out, val.blocked ? ",\"blocked\":true" : ",\"blocked\":false");
      if (x->declared) {
        ts_buf_puts(&out, x->required ? ",\"required\":true" : ",\"required\":false");
        ts_buf_puts(&out, x->scoped ? ",\"scoped\":true" : ",\"scoped\":false");
        ts_buf_puts(&out, ",\"declared_by\":");
        ts_buf_append_json_string(&out, x->declared_by, strlen(x->declared_by));
        ts_buf_puts(&out, ",\"description\":");
        ts_buf_append_json_string(&out, x->description, strlen(x->description));
      }
      ts_buf_putc(&out, '}');
    } else {
      char line[1200], shown[24];
      if (!found) snprintf(shown, sizeof shown, "-");
      else if (secret) snprintf(shown, sizeof shown, "••••");
      else snprintf(shown, sizeof shown, "%.20s", val.value ? val.value : "");
      /* pad by characters, not bytes (•••• is 12 bytes, 4 columns) */
      int pad = 22 - (secret && found ? 4 : (int)strlen(shown));
      snprintf(line, sizeof line, "%-25s %-7s %s%*s%s%s%s\n", x->name, secret ? "secret" : "text",
               shown, pad > 0 ? pad : 1, "", from, x->declared ? ", declared by " : "",
               x->declared ? x->declared_by : "");
      ts_buf_puts(&out, line);
    }
    ts_var_value_fini(&val);
  }
  if (json) ts_buf_puts(&out, "]\n");
  else if (!e.n) ts_buf_puts(&out, "(no variables)\n");
  if (!rc) fwrite(out.p ? out.p : "", 1, out.len, stdout);
  ts_buf_fini(&out);
  ts_vars_free(vars);
  free(e.v);
  return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

int ts_cli_env(int argc, char **argv) {
  env_args ea;
  memset(&ea, 0, sizeof ea);
  ea.type = -1;
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int r = ts_cli_parse(&ts_cli_cmd_env, argc, argv, &com, env_set, &ea);
  if (r >= 0) return r;
  const char *data_dir = ea.data_dir, *const *pos = ea.pos;
  int npos = ea.npos, json = ea.json, type = ea.type;
  const char *cmd = pos[0], *thread = pos[1], *name = pos[2];
  int want = cmd && !strcmp(cmd, "list") ? 2 : 3;
  if (!cmd || (strcmp(cmd, "set") && strcmp(cmd, "unset") && strcmp(cmd, "list"))) {
    fprintf(stderr, "toolstream env: set, unset or list? (try --help)\n");
    return 2;
  }
  if (npos != want) {
    fprintf(stderr, "toolstream env %s: wants %s (try --help)%s\n", cmd,
            want == 2 ? "THREAD" : "THREAD NAME",
            npos > want && !strcmp(cmd, "set") ? "; the value is read from standard input" : "");
    return 2;
  }
  if (!ts_thread_id_valid(thread, strlen(thread))) {
    fprintf(stderr, "toolstream env: '%.64s' is not a thread id\n", thread);
    return 2;
  }
  if (name && !ts_store_var_name_valid(name)) {
    fprintf(stderr, "toolstream env: '%.64s' is not a variable name (a letter or _, then "
                    "letters, digits, _ . -)\n", name);
    return 2;
  }
  if ((type >= 0 && strcmp(cmd, "set")) || (json && strcmp(cmd, "list"))) {
    fprintf(stderr, "toolstream env %s: %s is for env %s\n", cmd, json ? "--json" : "--secret/--text",
            json ? "list" : "set");
    return 2;
  }
  ts_store *s = NULL;
  char why[512];
  if (ts_store_open(data_dir, &s, why, sizeof why)) {
    fprintf(stderr, "toolstream env: cannot open the store: %s\n", why);
    return 1;
  }
  int rc = 1;
  r = ts_store_thread_exists(s, thread);
  if (r != 1) {
    fprintf(stderr, "toolstream env: no thread %s in %s\n", thread, ts_store_path(s));
    ts_store_close(s);
    return 1;
  }
  if (!strcmp(cmd, "list")) {
    rc = env_list(s, thread, json);
  } else if (!strcmp(cmd, "unset")) {
    r = ts_store_env_unset(s, thread, name);
    if (r < 0) fprintf(stderr, "toolstream env: %s\n", ts_store_errmsg(s));
    else if (r == 0) fprintf(stderr, "toolstream env: thread %s has no value of %s\n", thread, name);
    rc = r == 1 ? 0 : 1;
  } else {
    ts_vars *v = NULL;
    if (ts_vars_open(s, NULL, &v) == TS_E_OK) {
      if (type < 0) type = ts_vars_default_type(v, thread, name);
      size_t len = 0;
      char *value = type < 0 ? NULL : read_value(name, type == TS_VAR_SECRET, &len);
      if (type < 0) fprintf(stderr, "toolstream env: %s\n", ts_vars_errmsg(v));
      if (value) {
        if (ts_vars_set(v, thread, name, (ts_var_type)type, value, len, "env set"))
          fprintf(stderr, "toolstream env: %s\n", ts_vars_errmsg(v));
        else
          rc = 0;
        ts_vars_wipe(value, len);
        free(value);
      }
      if (!rc)
        fprintf(stderr, "toolstream env: %s set on thread %s (%s)\n", name, thread,
                type == TS_VAR_SECRET ? "secret, sealed" : "text");
      ts_vars_free(v);
    }
  }
  ts_store_close(s);
  return rc;
}
