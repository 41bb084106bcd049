/*
 * variables.h: variables (tools-spec §3): definitions, a thread's environment, how a
 * name resolves over the thread tree and the definition layers, and secrets encrypted
 * at rest. The rules and a worked example: docs/variables.md.
 *
 * Definitions. A tool, prompt or agent declares variables {name, type: text | secret,
 * required, scoped, description}. A declaration made on a thread (the runtime records
 * those of the tools a thread runs, ts_vars_declare) is what `scoped` and `env list`
 * read from the store.
 *
 * Precedence for a name, highest first:
 *   1. the thread's environment: its own value, else the nearest ancestor's, up the
 *      tree (see `scoped` below);
 *   2. the agent's `env`;            (ts_var_layers.agent)
 *   3. the tool's `env`, as given on the prompt's tools entry;   (ts_var_layers.tool)
 *   4. the prompt's own `env`;       (ts_var_layers.prompt)
 *   5. only when ts_var_layers.process_env is set, the process environment (how the
 *      release before the tree resolved JavaScript tools' variables; `run` keeps it for
 *      text variables, never for secrets).
 *
 * Scoped. A thread "declares N scoped" when a definition of N with scoped: true is
 * declared on it (the thread resolving for a tool declares what that tool declares).
 * Walking up from the thread: a value held by an ancestor is not inherited across a
 * thread that declares N scoped, unless the ancestor holding it declares N scoped too
 * (a value provided on a declaring thread flows down to every descendant of it). A
 * thread's own value always counts.
 *
 * Secrets. A secret is stored sealed with XChaCha20-Poly1305 (libsodium's
 * crypto_aead_xchacha20poly1305_ietf; the thread id and the name are the associated
 * data, so a sealed value moved to another thread or name fails to open) under a 32-byte
 * key: from the environment variable named by ts_vars_config.key_env (default
 * TOOLSTREAM_SECRET_KEY: 64 hex digits), else from the key file `secret.key` beside the
 * database, created (mode 0600, 64 hex digits and a newline) when the first secret is
 * stored. The store keeps the key's fingerprint (a keyed BLAKE2b hash, which says
 * nothing about the key), so a wrong key is refused with TS_E_VAR_KEY before anything is
 * decrypted, and a key file others can read is refused with TS_E_VAR_KEY_FILE. A secret
 * is decrypted only by ts_vars_resolve, for the tool whose definition asks for it; the
 * value handed out is wiped by ts_var_value_fini. Nothing here prints or logs a value.
 *
 * The crypto is libsodium's, used here alone (base/hmap.c uses it for hashing only).
 * Threads of use: a ts_vars uses its store
 * connection; use it from one thread at a time (as the store).
 */
#ifndef TS_VARIABLES_H
#define TS_VARIABLES_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "store/store.h"

typedef enum { TS_VAR_TEXT = TS_STORE_TEXT, TS_VAR_SECRET = TS_STORE_SECRET } ts_var_type;

/* One variable definition. Strings are borrowed by whoever holds the struct (the
 * registry copies the definitions of its tools). */
typedef struct {
  const char *name;
  ts_var_type type;
  int required;
  int scoped;
  const char *description; /* may be NULL */
} ts_var_def;

/* Values provided by definitions, each "NAME=VALUE" (the last of a name wins). */
typedef struct {
  const char *const *agent;
  size_t n_agent;
  const char *const *tool;
  size_t n_tool;
  const char *const *prompt;
  size_t n_prompt;
  int process_env; /* 1: the process environment is the lowest layer (text only) */
} ts_var_layers;

typedef enum {
  TS_VAR_FROM_NONE = 0, /* unresolved */
  TS_VAR_FROM_THREAD,   /* the thread's own environment */
  TS_VAR_FROM_ANCESTOR, /* inherited: `from_thread` holds it */
  TS_VAR_FROM_AGENT,
  TS_VAR_FROM_TOOL,
  TS_VAR_FROM_PROMPT,
  TS_VAR_FROM_PROCESS,
} ts_var_source;

/* "thread", "inherited", "agent env", "tool env", "prompt env", "process environment",
 * "unset". */
const char *ts_var_source_name(ts_var_source s);

typedef struct {
  char *value; /* malloc'd, NUL-terminated (len bytes before it); NULL when unresolved */
  size_t len;
  ts_var_source source;
  ts_var_type stored_type; /* of the value found (a secret is stored sealed) */
  char from_thread[300];   /* the thread holding it, for THREAD and ANCESTOR; else "" */
  int blocked;             /* 1 when an ancestor's value was not inherited (scoped) */
} ts_var_value;

/* Wipes and frees the value; the struct may be reused. NULL is a no-op. */
void ts_var_value_fini(ts_var_value *v);

typedef struct {
  const char *key_env; /* NULL: "TOOLSTREAM_SECRET_KEY" */
} ts_vars_config;

typedef struct ts_vars ts_vars;

/* A resolver on `store` (borrowed: it must outlive the ts_vars). Opening reads no key:
 * the key is loaded on the first secret stored or opened. Returns TS_E_OK (with *out) or
 * TS_E_NOMEM / TS_E_INVAL. */
int ts_vars_open(ts_store *store, const ts_vars_config *cfg, ts_vars **out);
void ts_vars_free(ts_vars *v); /* wipes the key; NULL is a no-op */

/* A readable line about the last error (never holding a value), "" after success. */
const char *ts_vars_errmsg(const ts_vars *v);

/* Resolves def->name for a call on `thread` by the rules above; `layers` may be NULL.
 * A secret found sealed is opened here. Returns TS_E_OK whether or not a value was
 * found (out->value NULL, out->source TS_VAR_FROM_NONE when not); a store error;
 * TS_E_VAR_KEY / TS_E_VAR_KEY_FILE (the key); TS_E_VAR_DECRYPT (a damaged value). On
 * error *out holds no value. */
int ts_vars_resolve(ts_vars *v, const char *thread, const ts_var_def *def,
                    const ts_var_layers *layers, ts_var_value *out);

/* Where def->name would come from, without opening a secret: as ts_vars_resolve, except
 * that a secret's out->value stays NULL (out->source and stored_type say where it is and
 * that it is sealed). Needs no key: `env list` uses it. */
int ts_vars_locate(ts_vars *v, const char *thread, const ts_var_def *def,
                   const ts_var_layers *layers, ts_var_value *out);

/* Sets `name` on `thread` to `len` bytes of `value` (no NUL bytes: TS_E_INVAL), sealing
 * it when `type` is secret (the key is created on first use, see above); `origin`
 * says where the value came from ("env set", "--env-file FILE", "--var"). */
int ts_vars_set(ts_vars *v, const char *thread, const char *name, ts_var_type type,
                const char *value, size_t len, const char *origin);

/* Records that `thread` runs something (`declared_by`: "tool search") declaring `def`. */
int ts_vars_declare(ts_vars *v, const char *thread, const ts_var_def *def,
                    const char *declared_by);

/* The type a value of `name` set on `thread` should be stored as when the caller does
 * not say: secret when a declaration of the name on the thread or an ancestor says
 * secret, or the thread's value of it is stored as secret already; else text. Returns
 * the type, or a negative ts_err. */
int ts_vars_default_type(ts_vars *v, const char *thread, const char *name);

/* Checks the secret key against the store now (what resolve would do on the first
 * secret): TS_E_OK when there is no secret yet or the key opens them; else as resolve. */
int ts_vars_check_key(ts_vars *v);

/* Overwrites n bytes at p with zeros in a way the compiler keeps (for buffers that held
 * a value: a read dotenv file, a typed secret). */
void ts_vars_wipe(void *p, size_t n);

/* ---- redaction ------------------------------------------------------------------- */

/* The longest value kept for redaction; longer secrets are redacted by their first
 * TS_VARS_REDACT_MAX bytes (and their base64 forms of it). */
#define TS_VARS_REDACT_MAX 4096

/* What a redacted secret becomes. */
#define TS_VARS_REDACTED "[redacted]"

/* Replaces, in the malloc'd text *text (*len bytes), every occurrence of `secret` (len
 * bytes, at least 4: shorter values are too common to find in text) and of its standard
 * and URL-safe base64 forms with TS_VARS_REDACTED; may realloc *text. Returns the number
 * of replacements, or TS_E_NOMEM (the text is then unchanged). */
int ts_vars_redact(char **text, size_t *len, const char *secret, size_t secret_len);

#endif /* TS_VARIABLES_H */
