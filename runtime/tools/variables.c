/*
 * variables.c: see variables.h and docs/variables.md.
 *
 * Resolution is a walk up the thread tree, one store lookup per level: the thread's own
 * value, then its declaration of the name (does it block what lies above?), then its
 * parent. The tree is shallow (prompts, agents and subagents nest a few levels), so a
 * walk of a few indexed reads per variable per call is cheap next to running the tool;
 * TS_VARS_MAX_DEPTH bounds it anyway.
 *
 * Why AEAD with the thread and name as associated data, and not plain secretbox: a row
 * of env_values copied by hand (or by a bug) to another thread or name must not open
 * there, or a value meant for one subtree could be read by another. The sealed form is
 * one version byte, the 24-byte random nonce, then ciphertext and tag.
 *
 * The key is loaded lazily, on the first secret sealed or opened, because most runs have
 * no secret at all and must not create or demand a key file. Its fingerprint in the
 * store's settings makes a wrong key an error at once ("not the key these secrets were
 * sealed with") instead of a decryption failure that reads like corruption.
 */
#include "tools/variables.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How many levels up the tree a walk goes before it gives up (a guard, not a limit met
 * in practice: threads nest a few levels). */
#define TS_VARS_MAX_DEPTH 256

#define SEAL_VERSION 1
#define KEY_FILE "secret.key"
#define KEY_ID_SETTING "secret_key_id"

struct ts_vars {
  ts_store *store;
  char key_env[64];
  int have_key;
  unsigned char key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
  char key_where[TS_STORE_PATH_MAX + 32]; /* "key file /x/secret.key" or "$VAR" */
  char err[600];
};

static const char *const source_names[] = {"unset",    "thread",     "inherited",
                                           "agent env", "tool env",  "prompt env",
                                           "process environment"};

const char *ts_var_source_name(ts_var_source s) {
  return (unsigned)s < sizeof source_names / sizeof source_names[0] ? source_names[s] : "?";
}

void ts_var_value_fini(ts_var_value *v) {
  if (!v) return;
  if (v->value) {
    sodium_memzero(v->value, v->len);
    free(v->value);
  }
  memset(v, 0, sizeof *v);
}

static int fail(ts_vars *v, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ts_vars *v, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->err, sizeof v->err, fmt, ap);
  va_end(ap);
  return code;
}

static int store_fail(ts_vars *v, int code) {
  return fail(v, code, "%s", ts_store_errmsg(v->store));
}

int ts_vars_open(ts_store *store, const ts_vars_config *cfg, ts_vars **out) {
  if (!store || !out) return TS_E_INVAL;
  if (sodium_init() < 0) return TS_E_NOMEM;
  ts_vars *v = calloc(1, sizeof *v);
  if (!v) return TS_E_NOMEM;
  v->store = store;
  snprintf(v->key_env, sizeof v->key_env, "%s",
           cfg && cfg->key_env ? cfg->key_env : "TOOLSTREAM_SECRET_KEY");
  *out = v;
  return TS_E_OK;
}

void ts_vars_free(ts_vars *v) {
  if (!v) return;
  sodium_memzero(v->key, sizeof v->key);
  free(v);
}

const char *ts_vars_errmsg(const ts_vars *v) { return v ? v->err : "no resolver"; }

/* ---- the key ------------------------------------------------------------------------ */

/* 64 hex digits (surrounding whitespace allowed) into the key; 0 or -1. */
static int parse_key(const char *text, size_t len, unsigned char *key) {
  while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
    len--;
  while (len && (*text == ' ' || *text == '\t')) text++, len--;
  size_t got = 0;
  if (len != 2 * crypto_aead_xchacha20poly1305_ietf_KEYBYTES) return -1;
  if (sodium_hex2bin(key, crypto_aead_xchacha20poly1305_ietf_KEYBYTES, text, len, NULL, &got,
                     NULL) != 0 ||
      got != crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    return -1;
  return 0;
}

static void key_id(const unsigned char *key, char *hex, size_t cap) {
  static const unsigned char ctx[] = "toolstream secret key fingerprint";
  unsigned char h[16];
  crypto_generichash(h, sizeof h, ctx, sizeof ctx - 1, key, crypto_aead_xchacha20poly1305_ietf_KEYBYTES);
  sodium_bin2hex(hex, cap, h, sizeof h);
}

/* The directory holding the database (the key file lives beside it). */
static void data_dir(const ts_vars *v, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", ts_store_path(v->store));
  char *slash = strrchr(buf, '/');
  if (slash) *slash = '\0';
  else snprintf(buf, cap, ".");
}

/* Reads the key file; 1 loaded, 0 absent, or a negative ts_err. */
static int read_key_file(ts_vars *v, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    return fail(v, TS_E_VAR_KEY_FILE, "cannot open the secret key file %s: %s", path,
                strerror(errno));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return fail(v, TS_E_VAR_KEY_FILE, "the secret key file %s is not a regular file", path);
  }
  if (sb.st_mode & 077) {
    close(fd);
    return fail(v, TS_E_VAR_KEY_FILE,
                "the secret key file %s is readable by others (mode %04o); it must be 0600 "
                "(chmod 600 %s)",
                path, (unsigned)(sb.st_mode & 07777), path);
  }
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  int bad = n < 0 || parse_key(buf, (size_t)(n < 0 ? 0 : n), v->key) != 0;
  sodium_memzero(buf, sizeof buf);
  if (bad)
    return fail(v, TS_E_VAR_KEY_FILE,
                "the secret key file %s is malformed (it holds 64 hex digits: a 32-byte key)",
                path);
  return 1;
}

/* Creates the key file with a fresh key (O_EXCL: two processes racing agree on one). */
static int create_key_file(ts_vars *v, const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return read_key_file(v, path) == 1 ? 0 : TS_E_VAR_KEY_FILE;
    return fail(v, TS_E_VAR_KEY_FILE, "cannot create the secret key file %s: %s", path,
                strerror(errno));
  }
  randombytes_buf(v->key, sizeof v->key);
  char hex[2 * sizeof v->key + 2];
  sodium_bin2hex(hex, sizeof hex, v->key, sizeof v->key);
  size_t n = strlen(hex);
  hex[n++] = '\n';
  int ok = write(fd, hex, n) == (ssize_t)n && fsync(fd) == 0;
  sodium_memzero(hex, sizeof hex);
  if (close(fd) != 0) ok = 0;
  if (!ok) {
    unlink(path);
    return fail(v, TS_E_VAR_KEY_FILE, "cannot write the secret key file %s", path);
  }
  return 0;
}

/* Loads the key (creating the key file when `create` and there is none) and checks it
 * against the store's fingerprint, recording the fingerprint on first use. */
static int load_key(ts_vars *v, int create) {
  if (v->have_key) return TS_E_OK;
  const char *e = getenv(v->key_env);
  char dir[TS_STORE_PATH_MAX], path[TS_STORE_PATH_MAX + 16];
  data_dir(v, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/%s", dir, KEY_FILE);
  int r;
  if (e && *e) {
    if (parse_key(e, strlen(e), v->key))
      return fail(v, TS_E_VAR_KEY_FILE, "$%s is not a secret key (64 hex digits: 32 bytes)",
                  v->key_env);
    snprintf(v->key_where, sizeof v->key_where, "$%s", v->key_env);
  } else {
    r = read_key_file(v, path);
    if (r < 0) return r;
    if (r == 0) {
      int any = ts_store_env_has_secrets(v->store);
      if (any < 0) return store_fail(v, any);
      if (any)
        return fail(v, TS_E_VAR_KEY_FILE,
                    "the store holds secrets but the secret key file %s is missing (restore it, "
                    "or set $%s)",
                    path, v->key_env);
      if (!create) return 0; /* nothing to open, nothing to seal yet */
      if ((r = create_key_file(v, path))) return r;
    }
    snprintf(v->key_where, sizeof v->key_where, "key file %s", path);
  }
  char id[64], want[64];
  key_id(v->key, id, sizeof id);
  r = ts_store_setting_get(v->store, KEY_ID_SETTING, want, sizeof want);
  if (r < 0) return store_fail(v, r);
  if (r == 1 && strcmp(id, want)) {
    sodium_memzero(v->key, sizeof v->key);
    return fail(v, TS_E_VAR_KEY,
                "the secret key (%s) is not the one this store's secrets were sealed with "
                "(fingerprint %.16s, the store expects %.16s)",
                v->key_where, id, want);
  }
  if (r == 0 && (r = ts_store_setting_set(v->store, KEY_ID_SETTING, id))) /* first use */
    return store_fail(v, r);
  v->have_key = 1;
  return TS_E_OK;
}

int ts_vars_check_key(ts_vars *v) {
  if (!v) return TS_E_INVAL;
  v->err[0] = '\0';
  int any = ts_store_env_has_secrets(v->store);
  if (any < 0) return store_fail(v, any);
  return any ? load_key(v, 0) : TS_E_OK;
}

/* ---- sealing ------------------------------------------------------------------------- */

static size_t make_ad(unsigned char *ad, size_t cap, const char *thread, const char *name) {
  size_t tl = strlen(thread), nl = strlen(name);
  if (tl + 1 + nl > cap) return 0;
  memcpy(ad, thread, tl);
  ad[tl] = 0;
  memcpy(ad + tl + 1, name, nl);
  return tl + 1 + nl;
}

static int seal(ts_vars *v, const char *thread, const char *name, const char *value,
                size_t len, unsigned char **out, size_t *out_len) {
  unsigned char ad[600];
  size_t adl = make_ad(ad, sizeof ad, thread, name);
  size_t n = 1 + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + len +
             crypto_aead_xchacha20poly1305_ietf_ABYTES;
  unsigned char *b = malloc(n);
  if (!b || !adl) {
    free(b);
    return fail(v, TS_E_NOMEM, "out of memory");
  }
  b[0] = SEAL_VERSION;
  unsigned char *nonce = b + 1;
  randombytes_buf(nonce, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
  unsigned long long cl = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(b + 1 + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                             &cl, (const unsigned char *)value, len, ad, adl,
                                             NULL, nonce, v->key);
  *out = b;
  *out_len = 1 + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + (size_t)cl;
  return TS_E_OK;
}

static int unseal(ts_vars *v, const char *thread, const char *name, const unsigned char *b,
                  size_t n, ts_var_value *out) {
  unsigned char ad[600];
  size_t adl = make_ad(ad, sizeof ad, thread, name);
  size_t head = 1 + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  if (!adl || n < head + crypto_aead_xchacha20poly1305_ietf_ABYTES || b[0] != SEAL_VERSION)
    return fail(v, TS_E_VAR_DECRYPT, "the secret %s of thread %s is damaged", name, thread);
  size_t cap = n - head - crypto_aead_xchacha20poly1305_ietf_ABYTES;
  char *p = malloc(cap + 1);
  if (!p) return fail(v, TS_E_NOMEM, "out of memory");
  unsigned long long ml = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt((unsigned char *)p, &ml, NULL, b + head,
                                                 n - head, ad, adl, b + 1, v->key) != 0) {
    free(p);
    return fail(v, TS_E_VAR_DECRYPT,
                "the secret %s of thread %s cannot be opened with the secret key (%s): it is "
                "damaged, was moved, or was sealed with another key",
                name, thread, v->key_where);
  }
  p[ml] = '\0';
  out->value = p;
  out->len = (size_t)ml;
  return TS_E_OK;
}

/* ---- setting and declaring ------------------------------------------------------------- */

int ts_vars_set(ts_vars *v, const char *thread, const char *name, ts_var_type type,
                const char *value, size_t len, const char *origin) {
  if (!v || !thread || !name || (!value && len)) return TS_E_INVAL;
  v->err[0] = '\0';
  if (len && memchr(value, '\0', len))
    return fail(v, TS_E_INVAL, "the value of %s holds a NUL byte", name);
  if (!ts_store_var_name_valid(name))
    return fail(v, TS_E_INVAL, "\"%.*s\" is not a variable name (a letter or _, then letters, "
                "digits, _ . -; at most %d bytes)", 140, name, TS_STORE_VAR_NAME_MAX);
  int r;
  if (type != TS_VAR_SECRET) {
    r = ts_store_env_set(v->store, thread, name, TS_STORE_TEXT, value, len, origin);
    return r ? store_fail(v, r) : TS_E_OK;
  }
  if ((r = load_key(v, 1))) return r;
  unsigned char *b = NULL;
  size_t bl = 0;
  if ((r = seal(v, thread, name, value ? value : "", len, &b, &bl))) return r;
  r = ts_store_env_set(v->store, thread, name, TS_STORE_SECRET, b, bl, origin);
  free(b);
  return r ? store_fail(v, r) : TS_E_OK;
}

int ts_vars_declare(ts_vars *v, const char *thread, const ts_var_def *def,
                    const char *declared_by) {
  if (!v || !def) return TS_E_INVAL;
  v->err[0] = '\0';
  ts_store_env_decl d = {thread, def->name, (ts_store_var_type)def->type, def->required,
                         def->scoped, def->description ? def->description : "", declared_by};
  int r = ts_store_env_declare(v->store, &d);
  return r ? store_fail(v, r) : TS_E_OK;
}

/* ---- resolving ---------------------------------------------------------------------------- */

typedef struct {
  char parent[300];
  int has_parent, found;
} parent_of;

static int grab_parent(void *user, const ts_store_thread *t) {
  parent_of *p = user;
  p->found = 1;
  if (t->parent) {
    p->has_parent = 1;
    snprintf(p->parent, sizeof p->parent, "%s", t->parent);
  }
  return 0;
}

typedef struct {
  int found;
  ts_store_var_type type;
  unsigned char *bytes;
  size_t len;
} found_value;

static int grab_value(void *user, const ts_store_env_value *e) {
  found_value *f = user;
  f->bytes = malloc(e->len + 1);
  if (!f->bytes) return 1;
  memcpy(f->bytes, e->value, e->len);
  f->bytes[e->len] = 0;
  f->len = e->len;
  f->type = e->type;
  f->found = 1;
  return 0;
}

typedef struct {
  int scoped, secret, found;
} found_decl;

static int grab_decl(void *user, const ts_store_env_decl *d) {
  found_decl *f = user;
  f->found = 1;
  f->scoped = d->scoped;
  f->secret = d->type == TS_STORE_SECRET;
  return 0;
}

/* The last "NAME=VALUE" of `name` in a layer, or NULL. */
static const char *layer_get(const char *const *kv, size_t n, const char *name) {
  size_t nl = strlen(name);
  for (size_t i = n; i-- > 0;)
    if (kv[i] && !strncmp(kv[i], name, nl) && kv[i][nl] == '=') return kv[i] + nl + 1;
  return NULL;
}

static int put_text(ts_vars *v, ts_var_value *out, const char *s, ts_var_source src) {
  size_t n = strlen(s);
  out->value = malloc(n + 1);
  if (!out->value) return fail(v, TS_E_NOMEM, "out of memory");
  memcpy(out->value, s, n + 1);
  out->len = n;
  out->source = src;
  out->stored_type = TS_VAR_TEXT;
  return TS_E_OK;
}

static int walk(ts_vars *v, const char *thread, const ts_var_def *def,
                const ts_var_layers *layers, ts_var_value *out, int open_secret);

int ts_vars_resolve(ts_vars *v, const char *thread, const ts_var_def *def,
                    const ts_var_layers *layers, ts_var_value *out) {
  return walk(v, thread, def, layers, out, 1);
}

int ts_vars_locate(ts_vars *v, const char *thread, const ts_var_def *def,
                   const ts_var_layers *layers, ts_var_value *out) {
  return walk(v, thread, def, layers, out, 0);
}

static int walk(ts_vars *v, const char *thread, const ts_var_def *def,
                const ts_var_layers *layers, ts_var_value *out, int open_secret) {
  if (!out) return TS_E_INVAL;
  memset(out, 0, sizeof *out);
  if (!v || !thread || !def || !def->name) return TS_E_INVAL;
  v->err[0] = '\0';
  char t[300];
  snprintf(t, sizeof t, "%s", thread);
  int blocked = 0, r;
  for (int level = 0; level < TS_VARS_MAX_DEPTH; level++) {
    found_value fv = {0};
    r = ts_store_env_get(v->store, t, def->name, grab_value, &fv);
    if (r < 0 && r != TS_E_ABORTED) return store_fail(v, r);
    if (r == TS_E_ABORTED) return fail(v, TS_E_NOMEM, "out of memory");
    found_decl fd = {0};
    if (level == 0) {
      fd.scoped = def->scoped; /* the resolving thread declares what its tool declares */
    } else {
      r = ts_store_env_decl_get(v->store, t, def->name, grab_decl, &fd);
      if (r < 0) {
        free(fv.bytes);
        return store_fail(v, r);
      }
    }
    /* Own values count; an ancestor's counts unless a scoped thread below blocked it and
     * the ancestor does not declare the name scoped itself. */
    if (fv.found && (level == 0 || !blocked || fd.scoped)) {
      out->source = level == 0 ? TS_VAR_FROM_THREAD : TS_VAR_FROM_ANCESTOR;
      out->stored_type = (ts_var_type)fv.type;
      snprintf(out->from_thread, sizeof out->from_thread, "%s", t);
      if (fv.type == TS_STORE_SECRET && !open_secret) { /* where, not what */
        sodium_memzero(fv.bytes, fv.len);
        free(fv.bytes);
        return TS_E_OK;
      }
      if (fv.type == TS_STORE_SECRET) {
        if ((r = load_key(v, 0)) == TS_E_OK && !v->have_key)
          r = fail(v, TS_E_VAR_KEY_FILE, "no secret key to open %s with", def->name);
        if (!r) r = unseal(v, t, def->name, fv.bytes, fv.len, out);
        sodium_memzero(fv.bytes, fv.len);
        free(fv.bytes);
        if (r) {
          memset(out, 0, sizeof *out);
          return r;
        }
        return TS_E_OK;
      }
      out->value = (char *)fv.bytes;
      out->len = fv.len;
      return TS_E_OK;
    }
    if (fv.found) out->blocked = 1;
    free(fv.bytes);
    if (fd.scoped) blocked = 1;
    parent_of p = {0};
    r = ts_store_thread_get(v->store, t, grab_parent, &p);
    if (r < 0) return store_fail(v, r);
    if (!p.has_parent) break;
    snprintf(t, sizeof t, "%s", p.parent);
  }
  const char *s = NULL;
  if (layers && (s = layer_get(layers->agent, layers->n_agent, def->name)))
    return put_text(v, out, s, TS_VAR_FROM_AGENT);
  if (layers && (s = layer_get(layers->tool, layers->n_tool, def->name)))
    return put_text(v, out, s, TS_VAR_FROM_TOOL);
  if (layers && (s = layer_get(layers->prompt, layers->n_prompt, def->name)))
    return put_text(v, out, s, TS_VAR_FROM_PROMPT);
  if (layers && layers->process_env && def->type != TS_VAR_SECRET && (s = getenv(def->name)))
    return put_text(v, out, s, TS_VAR_FROM_PROCESS);
  return TS_E_OK;
}

int ts_vars_default_type(ts_vars *v, const char *thread, const char *name) {
  if (!v || !thread || !name) return TS_E_INVAL;
  char t[300];
  snprintf(t, sizeof t, "%s", thread);
  for (int level = 0; level < TS_VARS_MAX_DEPTH; level++) {
    found_decl fd = {0};
    int r = ts_store_env_decl_get(v->store, t, name, grab_decl, &fd);
    if (r < 0) return store_fail(v, r);
    if (fd.secret) return TS_VAR_SECRET;
    if (level == 0) {
      found_value fv = {0};
      r = ts_store_env_get(v->store, t, name, grab_value, &fv);
      if (fv.bytes) sodium_memzero(fv.bytes, fv.len);
      free(fv.bytes);
      if (r < 0 && r != TS_E_ABORTED) return store_fail(v, r);
      if (fv.found && fv.type == TS_STORE_SECRET) return TS_VAR_SECRET;
    }
    parent_of p = {0};
    r = ts_store_thread_get(v->store, t, grab_parent, &p);
    if (r < 0) return store_fail(v, r);
    if (!p.has_parent) break;
    snprintf(t, sizeof t, "%s", p.parent);
  }
  return TS_VAR_TEXT;
}

void ts_vars_wipe(void *p, size_t n) {
  if (p && n) sodium_memzero(p, n);
}

/* ---- redaction ----------------------------------------------------------------------------- */

/* Replaces every occurrence of needle in *text; returns the count or TS_E_NOMEM. */
static int replace_all(char **text, size_t *len, const char *needle, size_t nl) {
  if (nl == 0 || nl > *len) return 0;
  size_t count = 0;
  for (size_t i = 0; i + nl <= *len;) {
    if (!memcmp(*text + i, needle, nl)) count++, i += nl;
    else i++;
  }
  if (!count) return 0;
  size_t rl = strlen(TS_VARS_REDACTED);
  size_t n = *len - count * nl + count * rl;
  char *o = malloc(n + 1);
  if (!o) return TS_E_NOMEM;
  size_t j = 0;
  for (size_t i = 0; i < *len;) {
    if (i + nl <= *len && !memcmp(*text + i, needle, nl)) {
      memcpy(o + j, TS_VARS_REDACTED, rl);
      j += rl;
      i += nl;
    } else {
      o[j++] = (*text)[i++];
    }
  }
  o[j] = '\0';
  sodium_memzero(*text, *len);
  free(*text);
  *text = o;
  *len = j;
  return (int)count;
}

int ts_vars_redact(char **text, size_t *len, const char *secret, size_t secret_len) {
  if (!text || !*text || !len || !secret) return TS_E_INVAL;
  if (secret_len < 4) return 0;
  if (secret_len > TS_VARS_REDACT_MAX) secret_len = TS_VARS_REDACT_MAX;
  int total = 0, r = replace_all(text, len, secret, secret_len);
  if (r < 0) return r;
  total += r;
  /* Its base64 forms too (a tool that encodes what it was given still leaks it): the
   * whole encoding, padded and not, first; then, for the value inside a longer encoded
   * text, the characters its whole 3-byte groups fix (the last one or two depend on what
   * follows). Padding is not searched for on its own. */
  static const int variants[] = {sodium_base64_VARIANT_ORIGINAL,
                                 sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
                                 sodium_base64_VARIANT_URLSAFE,
                                 sodium_base64_VARIANT_URLSAFE_NO_PADDING};
  size_t cap = sodium_base64_ENCODED_LEN(TS_VARS_REDACT_MAX, sodium_base64_VARIANT_ORIGINAL);
  char *b64 = malloc(cap);
  if (!b64) return TS_E_NOMEM;
  for (int pass = 0; pass < 2 && r >= 0; pass++) {
    for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
      sodium_bin2base64(b64, cap, (const unsigned char *)secret, secret_len, variants[k]);
      size_t bl = strlen(b64);
      if (pass == 1) {
        bl = bl < (secret_len / 3) * 4 ? bl : (secret_len / 3) * 4;
        if (k % 2 == 0) continue; /* the prefix is the same with or without padding */
      }
      if (bl < 8) continue; /* too short to tell from ordinary text */
      r = replace_all(text, len, b64, bl);
      if (r < 0) break;
      total += r;
    }
  }
  sodium_memzero(b64, cap);
  free(b64);
  return r < 0 ? r : total;
}
