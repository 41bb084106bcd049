/*
 * sandbox.c: state.runCode on Duktape (the only includer of duktape.h).
 *
 * One run is one `sb_run` record and one Duktape heap made for it. The record is the
 * heap's udata, so the three hooks Duktape gives an embedder all land here:
 *
 *   - the allocator (sb_alloc/sb_realloc/sb_free) puts a small header before every
 *     block, holding its size and links in a list of the run's live blocks. The size
 *     makes the cap exact (`used` is the sum of live request sizes, refused past
 *     `limit`); the list lets a run whose heap hit a fatal error free everything it
 *     holds without asking the broken heap.
 *   - the execution-timeout check (ts__sandbox_timeout_check, wired in by
 *     runtime/duk/ts_duk_config.h) runs every 256 Ki instructions. It is sticky: once it
 *     has said "stop" it says so forever, which is what makes Duktape rethrow at every
 *     instruction until the error is out of the script, so `catch` cannot swallow it.
 *     The reason it stopped (deadline, terminate handle, memory cap) is recorded and
 *     decides the result's status, whatever the script did with the RangeError.
 *   - the fatal handler, which must not return: it longjmps back to ts_sandbox_run,
 *     which then frees the run's blocks by the list. Everything the script can do runs
 *     inside duk_safe_call, so fatal errors are not expected; this is the backstop.
 *
 * Out-of-memory inside the heap: when a request is refused, Duktape runs mark-and-sweep
 * and retries, up to 10 times, before it throws "alloc failed"; a refusal alone is
 * therefore not yet "exceeded". We count refusals in a row without a successful growth
 * in between; more than Duktape's retries means it has given up, and the run is marked
 * out of memory (sticky, like a timeout). As a second net, a run that ends with "alloc
 * failed" after any refusal is reported as out of memory too.
 *
 * Strings leave the heap in Duktape's internal encoding, CESU-8-like UTF-8 in which a
 * character outside the BMP is two 3-byte surrogates; cesu_fix() rewrites them in
 * place to UTF-8 (never longer), so the value and the console are valid JSON.
 */
#include "js/sandbox.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "js/duk/ts_duk_config.h"
#include <duktape.h>

#include "base/error.h"
#include "base/strbuf.h"

/* Duktape's DUK_HEAP_ALLOC_FAIL_MARKANDSWEEP_LIMIT: a failed allocation is retried after
 * this many garbage collections before Duktape gives up. */
#define SB_DUK_ALLOC_RETRIES 10

enum { STOP_NONE, STOP_TIMEOUT, STOP_TERMINATED, STOP_OOM };
enum { PHASE_SETUP, PHASE_INPUT, PHASE_RUN, PHASE_VALUE };

/* The header before each block; the union keeps the payload max-aligned. */
typedef union sb_blk {
  struct {
    union sb_blk *prev, *next;
    size_t size;
  } h;
  max_align_t align;
} sb_blk;

typedef struct {
  sb_blk head; /* sentinel of the circular list of live blocks */
  size_t used, limit, peak;
  unsigned refused_in_a_row;
  unsigned long refused_total;
  int oom; /* Duktape gave up on an allocation */

  uint64_t deadline_ns;
  uint32_t timeout_ms;
  ts_sandbox_cancel *cancel;
  const volatile int *cancel_flag;
  const char *term_reason;
  int stop; /* STOP_*: sticky */
  unsigned alloc_ticks; /* allocations seen, for sb_poll */

  int phase;
  const char *code, *input;
  size_t code_len, input_len;
  char *value;
  size_t value_len;

  ts_buf console; /* the JSON array being built, without its closing bracket */
  size_t console_limit;
  int console_entries, console_full;

  void *extra; /* the body's own state (tool modules) */

  duk_context *ctx;
  jmp_buf fatal_jb;
  char fatal_msg[160];
} sb_run;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- terminate handle ------------------------------------------------------------- */

void ts_sandbox_cancel_init(ts_sandbox_cancel *c) {
  atomic_init(&c->reason, NULL);
}

void ts_sandbox_terminate(ts_sandbox_cancel *c, const char *reason) {
  const char *expected = NULL;
  if (!c) return;
  atomic_compare_exchange_strong(&c->reason, &expected, reason ? reason : "terminated");
}

/* ---- the interrupt check ---------------------------------------------------------- */

int ts__sandbox_timeout_check(void *udata) {
  sb_run *r = udata;
  if (r->stop) return 1;
  if (r->cancel) {
    const char *why = atomic_load_explicit(&r->cancel->reason, memory_order_acquire);
    if (why) {
      r->term_reason = why;
      r->stop = STOP_TERMINATED;
      return 1;
    }
  }
  if (r->cancel_flag && *r->cancel_flag) {
    r->term_reason = "the call was cancelled";
    r->stop = STOP_TERMINATED;
    return 1;
  }
  if (r->oom) {
    r->stop = STOP_OOM;
    return 1;
  }
  if (now_ns() >= r->deadline_ns) {
    r->stop = STOP_TIMEOUT;
    return 1;
  }
  return 0;
}

/* ---- the capping allocator -------------------------------------------------------- */

#define SB_REFUSALS_MAX 256

static void *sb_refuse(sb_run *r) {
  r->refused_total++;
  r->refused_in_a_row++;
  /* Duktape gave up on one allocation, or the script keeps hitting the cap (catching
   * "alloc failed" and trying again): either way it has reached its limit. */
  if (r->refused_in_a_row > SB_DUK_ALLOC_RETRIES || r->refused_total > SB_REFUSALS_MAX) r->oom = 1;
  return NULL;
}

static void sb_link(sb_run *r, sb_blk *b, size_t size) {
  b->h.size = size;
  b->h.prev = &r->head;
  b->h.next = r->head.h.next;
  b->h.next->h.prev = b;
  r->head.h.next = b;
}

static void sb_unlink(sb_blk *b) {
  b->h.prev->h.next = b->h.next;
  b->h.next->h.prev = b->h.prev;
}

static void sb_grew(sb_run *r) {
  if (r->used > r->peak) r->peak = r->used;
  r->refused_in_a_row = 0;
}

void ts__duk_request_interrupt(duk_context *ctx);

/* Native code (Array.prototype.join over 1e5 elements, a big regexp replace...) runs
 * many allocations between bytecode instructions, and a loop of few instructions around
 * it reaches the 256 Ki-instruction interrupt check only after minutes. So every
 * SB_POLL_EVERY allocations the allocator looks at the deadline, the terminate handle and
 * the memory cap itself, and when the run must stop it makes the executor check at its
 * next instruction. */
#define SB_POLL_EVERY 16
static void sb_poll(sb_run *r) {
  if (++r->alloc_ticks % SB_POLL_EVERY && !r->oom) return;
  if (r->ctx && ts__sandbox_timeout_check(r)) ts__duk_request_interrupt(r->ctx);
}

static void *sb_alloc(void *udata, duk_size_t size) {
  sb_run *r = udata;
  sb_poll(r);
  if (size == 0) return NULL;
  if (size > r->limit - r->used || size > SIZE_MAX - sizeof(sb_blk)) return sb_refuse(r);
  sb_blk *b = malloc(sizeof *b + size);
  if (!b) return sb_refuse(r);
  sb_link(r, b, size);
  r->used += size;
  sb_grew(r);
  return b + 1;
}

static void sb_free(void *udata, void *ptr) {
  sb_run *r = udata;
  if (!ptr) return;
  sb_blk *b = (sb_blk *)ptr - 1;
  sb_unlink(b);
  r->used -= b->h.size;
  free(b);
}

static void *sb_realloc(void *udata, void *ptr, duk_size_t size) {
  sb_run *r = udata;
  if (!ptr) return sb_alloc(udata, size);
  sb_poll(r);
  if (size == 0) {
    sb_free(udata, ptr);
    return NULL;
  }
  sb_blk *b = (sb_blk *)ptr - 1;
  size_t old = b->h.size;
  if (size > old && (size - old > r->limit - r->used || size > SIZE_MAX - sizeof(sb_blk)))
    return sb_refuse(r);
  sb_unlink(b);
  sb_blk *nb = realloc(b, sizeof *nb + size);
  if (!nb) { /* the old block is intact: put it back */
    sb_link(r, b, old);
    return sb_refuse(r);
  }
  sb_link(r, nb, size);
  r->used = r->used - old + size;
  if (size > old) sb_grew(r);
  return nb + 1;
}

static void sb_free_all(sb_run *r) {
  while (r->head.h.next != &r->head) {
    sb_blk *b = r->head.h.next;
    sb_unlink(b);
    free(b);
  }
  r->used = 0;
}

static void sb_fatal(void *udata, const char *msg) {
  sb_run *r = udata;
  snprintf(r->fatal_msg, sizeof r->fatal_msg, "%s", msg ? msg : "fatal error");
  longjmp(r->fatal_jb, 1);
}

/* ---- strings out of the heap ------------------------------------------------------ */

/* Rewrites Duktape's surrogates (ED A0..BF xx) in place: a high+low pair becomes the
 * 4-byte UTF-8 of the character, a lone one U+FFFD (same 3 bytes). Returns the new
 * length (never longer). */
static size_t cesu_fix(char *buf, size_t n) {
  unsigned char *s = (unsigned char *)buf;
  size_t i = 0, o = 0;
  while (i < n) {
    if (s[i] == 0xED && i + 2 < n && s[i + 1] >= 0xA0 && (s[i + 2] & 0xC0) == 0x80) {
      unsigned hi = 0xD000u | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
      if (hi < 0xDC00 && i + 5 < n && s[i + 3] == 0xED && s[i + 4] >= 0xB0 &&
          (s[i + 5] & 0xC0) == 0x80) {
        unsigned lo = 0xD000u | ((s[i + 4] & 0x3Fu) << 6) | (s[i + 5] & 0x3Fu);
        unsigned long cp = 0x10000ul + ((unsigned long)(hi - 0xD800) << 10) + (lo - 0xDC00);
        s[o++] = (unsigned char)(0xF0 | (cp >> 18));
        s[o++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        s[o++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        s[o++] = (unsigned char)(0x80 | (cp & 0x3F));
        i += 6;
      } else {
        s[o++] = 0xEF, s[o++] = 0xBF, s[o++] = 0xBD;
        i += 3;
      }
      continue;
    }
    s[o++] = s[i++];
  }
  return o;
}

static char *dup_fixed(const char *s, size_t n, size_t *out_len) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  n = cesu_fix(d, n);
  d[n] = '\0';
  if (out_len) *out_len = n;
  return d;
}

/* ---- console ---------------------------------------------------------------------- */

static sb_run *run_of(duk_context *ctx) {
  duk_memory_functions mf;
  duk_get_memory_functions(ctx, &mf);
  return mf.udata;
}

static duk_ret_t json_encode_top(duk_context *ctx, void *udata) {
  (void)udata;
  duk_json_encode(ctx, -1);
  return 1;
}

static duk_ret_t json_decode_top(duk_context *ctx, void *udata) {
  (void)udata;
  duk_json_decode(ctx, -1);
  return 1;
}

/* Adds one console entry, cut (at a character boundary) so that the array stays under
 * its limit; once an entry has been cut, later ones are dropped. */
static void console_add(sb_run *r, const char *s, size_t n) {
  if (r->console_full || r->console.err) return;
  ts_buf *b = &r->console;
  size_t before = b->len;
  size_t room = r->console_limit > before + 4 ? r->console_limit - before - 4 : 0;
  size_t take = n < room ? n : room;
  for (;;) {
    while (take > 0 && take < n && ((unsigned char)s[take] & 0xC0) == 0x80) take--;
    size_t fixed;
    char *tmp = dup_fixed(s, take, &fixed); /* never longer than take */
    if (!tmp) {
      b->err = TS_E_NOMEM;
      return;
    }
    if (r->console_entries) ts_buf_putc(b, ',');
    ts_buf_append_json_string(b, tmp, fixed);
    free(tmp);
    if (b->err) return;
    if (b->len <= r->console_limit) break;
    /* Escapes made it longer than the room: halve and retry. */
    b->len = before;
    b->p[before] = '\0';
    if (take == 0) {
      r->console_full = 1;
      return;
    }
    take /= 2;
  }
  r->console_entries++;
  if (take < n) r->console_full = 1;
}

static duk_ret_t console_log(duk_context *ctx) {
  sb_run *r = run_of(ctx);
  if (r->console_full) return 0;
  duk_idx_t n = duk_get_top(ctx);
  /* Join the arguments with spaces into one string inside the heap (it is capped by
   * the heap's memory limit), then copy it out. */
  for (duk_idx_t i = 0; i < n; i++) {
    if (duk_is_object(ctx, i) && !duk_is_function(ctx, i)) {
      duk_dup(ctx, i);
      if (duk_safe_call(ctx, json_encode_top, NULL, 1, 1) != DUK_EXEC_SUCCESS ||
          !duk_is_string(ctx, -1)) {
        duk_pop(ctx);
        duk_dup(ctx, i);
        duk_safe_to_string(ctx, -1);
      }
      duk_replace(ctx, i);
    } else if (!duk_is_string(ctx, i)) {
      duk_safe_to_string(ctx, i);
    }
  }
  duk_push_string(ctx, " ");
  duk_insert(ctx, 0);
  duk_join(ctx, n);
  duk_size_t len;
  const char *s = duk_get_lstring(ctx, -1, &len);
  console_add(r, s ? s : "", s ? len : 0);
  return 0;
}

/* ---- the run, inside one protected call ------------------------------------------- */

static const char *const removed_globals[] = {"Duktape", "require", "print", "alert", "module",
                                              "exports"};

/* Isolation: only ECMAScript built-ins and console remain; leaves the global object on
 * the stack. */
static void setup_globals(duk_context *ctx) {
  duk_push_global_object(ctx);
  for (size_t i = 0; i < sizeof removed_globals / sizeof *removed_globals; i++)
    duk_del_prop_string(ctx, -1, removed_globals[i]);
  duk_push_object(ctx);
  static const char *const levels[] = {"log", "info", "warn", "error", "debug"};
  for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
    duk_push_c_function(ctx, console_log, DUK_VARARGS);
    duk_put_prop_string(ctx, -2, levels[i]);
  }
  duk_put_prop_string(ctx, -2, "console");
}

static duk_ret_t run_body(duk_context *ctx, void *udata) {
  sb_run *r = udata;
  setup_globals(ctx);

  r->phase = PHASE_INPUT;
  if (r->input) {
    duk_push_lstring(ctx, r->input, r->input_len);
    duk_json_decode(ctx, -1);
  } else {
    duk_push_undefined(ctx);
  }
  duk_put_prop_string(ctx, -2, "input");
  duk_pop(ctx);

  r->phase = PHASE_RUN;
  duk_push_lstring(ctx, r->code, r->code_len);
  duk_push_string(ctx, "code");
  duk_compile(ctx, DUK_COMPILE_EVAL);
  duk_call(ctx, 0);

  r->phase = PHASE_VALUE;
  duk_json_encode(ctx, -1);
  duk_size_t len = 4;
  const char *s = duk_is_string(ctx, -1) ? duk_get_lstring(ctx, -1, &len) : "null";
  r->value = dup_fixed(s, len, &r->value_len);
  return 0;
}

/* ---- results ---------------------------------------------------------------------- */

static void set_error(ts_sandbox_result *out, ts_sandbox_status st, int code, const char *msg) {
  out->status = st;
  out->code = code;
  free(out->error);
  size_t n = strlen(msg);
  out->error = dup_fixed(msg, n, NULL);
  if (out->error) { /* one line */
    for (char *p = out->error; *p; p++)
      if (*p == '\n' || *p == '\r') *p = ' ';
  }
}

const char *ts_sandbox_status_name(ts_sandbox_status s) {
  switch (s) {
    case TS_SANDBOX_OK: return "ok";
    case TS_SANDBOX_ERROR: return "error";
    case TS_SANDBOX_TIMEOUT: return "timeout";
    case TS_SANDBOX_TERMINATED: return "terminated";
    case TS_SANDBOX_OOM: return "oom";
  }
  return "error";
}

void ts_sandbox_result_fini(ts_sandbox_result *r) {
  if (!r) return;
  free(r->value_json);
  free(r->console_json);
  free(r->error);
  memset(r, 0, sizeof *r);
}

/* Settles the status once the script has ended (rc: duk_safe_call's return; err: the
 * error as a string when it failed). */
static void classify(sb_run *r, int rc, const char *err, uint32_t timeout_ms,
                     ts_sandbox_result *out) {
  char msg[512];
  if (!err) err = "Error";
  int oom = r->stop == STOP_OOM || r->oom ||
            (rc != DUK_EXEC_SUCCESS && r->refused_total && strstr(err, "alloc failed"));
  if (r->stop == STOP_TERMINATED) {
    snprintf(msg, sizeof msg, "terminated: %s", r->term_reason);
    set_error(out, TS_SANDBOX_TERMINATED, TS_E_SANDBOX_TERMINATED, msg);
  } else if (r->stop == STOP_TIMEOUT) {
    snprintf(msg, sizeof msg, "timeout: the script ran longer than %lu ms",
             (unsigned long)timeout_ms);
    set_error(out, TS_SANDBOX_TIMEOUT, TS_E_SANDBOX_TIMEOUT, msg);
  } else if (oom) {
    snprintf(msg, sizeof msg, "out of memory: the script reached its memory limit of %zu bytes",
             r->limit);
    set_error(out, TS_SANDBOX_OOM, TS_E_SANDBOX_OOM, msg);
  } else if (rc != DUK_EXEC_SUCCESS) {
    int code = r->phase == PHASE_INPUT   ? TS_E_SANDBOX_INPUT
               : r->phase == PHASE_VALUE ? TS_E_SANDBOX_VALUE
                                         : TS_E_SANDBOX_ERROR;
    const char *what = r->phase == PHASE_INPUT   ? "input is not valid JSON: "
                       : r->phase == PHASE_VALUE ? "the value cannot be converted to JSON: "
                       : r->phase == PHASE_SETUP ? "sandbox setup failed: "
                                                 : "";
    snprintf(msg, sizeof msg, "%s%s", what, err);
    set_error(out, TS_SANDBOX_ERROR, code, msg);
  } else if (!r->value) {
    set_error(out, TS_SANDBOX_ERROR, TS_E_NOMEM, "out of memory (host)");
  } else {
    out->status = TS_SANDBOX_OK;
    out->code = 0;
    out->value_json = r->value;
    out->value_len = r->value_len;
    r->value = NULL;
  }
}

/* One run: a fresh heap under the options, `body` inside one protected call (it reads
 * r->code and r->extra and sets r->value on success), the status settled into `out`. */
static int sb_exec(const char *code, size_t len, const ts_sandbox_opts *o,
                   duk_safe_call_function body, void *extra, ts_sandbox_result *out) {
  static const ts_sandbox_opts defaults;
  uint64_t t0 = now_ns();
  memset(out, 0, sizeof *out);
  if (!o) o = &defaults;
  if (!code && len) {
    set_error(out, TS_SANDBOX_ERROR, TS_E_INVAL, "invalid argument: no code");
    return out->code;
  }
  uint32_t timeout_ms = o->timeout_ms ? o->timeout_ms : TS_SANDBOX_DEFAULT_TIMEOUT_MS;

  sb_run *r = calloc(1, sizeof *r);
  if (!r) {
    set_error(out, TS_SANDBOX_ERROR, TS_E_NOMEM, "out of memory (host)");
    return out->code;
  }
  r->head.h.prev = r->head.h.next = &r->head;
  r->limit = o->memory_limit_bytes ? o->memory_limit_bytes : TS_SANDBOX_DEFAULT_MEMORY_LIMIT;
  r->deadline_ns = t0 + (uint64_t)timeout_ms * 1000000u;
  r->timeout_ms = timeout_ms;
  r->cancel = o->cancel;
  r->cancel_flag = o->cancel_flag;
  r->extra = extra;
  r->code = code ? code : "";
  r->code_len = len;
  r->input = o->input_json;
  r->input_len = o->input_len;
  r->console_limit = o->console_limit_bytes ? o->console_limit_bytes
                                            : TS_SANDBOX_DEFAULT_CONSOLE_LIMIT;
  /* Entries are cut to the limit before escaping, and escaping may make one up to six
   * times longer; the buffer's own limit leaves room for that and for the note. */
  ts_buf_init(&r->console, r->console_limit < SIZE_MAX / 16 ? r->console_limit * 7 + 512
                                                             : SIZE_MAX / 2);
  ts_buf_putc(&r->console, '[');

  if (setjmp(r->fatal_jb)) {
    /* Duktape hit a fatal error: the heap can be neither used nor destroyed; its
     * blocks are dropped by the list. A stop reason, if any, is the better message. */
    char msg[256];
    snprintf(msg, sizeof msg, "sandbox fatal error: %s", r->fatal_msg);
    r->ctx = NULL;
    classify(r, DUK_EXEC_ERROR, msg, timeout_ms, out);
    sb_free_all(r);
    goto done;
  }

  r->ctx = duk_create_heap(sb_alloc, sb_realloc, sb_free, r, sb_fatal);
  if (!r->ctx) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "out of memory: a heap does not fit in the memory limit of %zu bytes", r->limit);
    set_error(out, TS_SANDBOX_OOM, TS_E_SANDBOX_OOM, msg);
    sb_free_all(r);
    goto done;
  }
  int rc = duk_safe_call(r->ctx, body, r, 0, 1);
  classify(r, rc, rc == DUK_EXEC_SUCCESS ? NULL : duk_safe_to_string(r->ctx, -1), timeout_ms,
           out);
  duk_destroy_heap(r->ctx);
  r->ctx = NULL;
  sb_free_all(r); /* nothing, unless Duktape leaked */

done:
  if (r->console_full) {
    char note[96];
    snprintf(note, sizeof note, "[console output truncated at %zu bytes]", r->console_limit);
    r->console_full = 0;
    r->console_limit = (size_t)-1 / 2;
    console_add(r, note, strlen(note));
    out->console_truncated = 1;
  }
  ts_buf_putc(&r->console, ']');
  if (!r->console.err) {
    out->console_json = r->console.p;
    out->console_len = r->console.len;
    r->console.p = NULL;
  }
  ts_buf_fini(&r->console);
  out->memory_peak = r->peak;
  free(r->value);
  free(r);
  if (out->status == TS_SANDBOX_OK && !out->console_json) {
    set_error(out, TS_SANDBOX_ERROR, TS_E_NOMEM, "out of memory (host)");
  }
  out->elapsed_ms = (double)(now_ns() - t0) / 1e6;
  return out->code;
}

int ts_sandbox_run(const char *code, size_t len, const ts_sandbox_opts *o, ts_sandbox_result *out) {
  return sb_exec(code, len, o, run_body, NULL, out);
}

char *ts_sandbox_result_json(const ts_sandbox_result *r, size_t *len) {
  ts_buf b;
  ts_buf_init(&b, (size_t)-1 / 2);
  ts_buf_puts(&b, "{\"status\":\"");
  ts_buf_puts(&b, ts_sandbox_status_name(r->status));
  ts_buf_putc(&b, '"');
  if (r->status == TS_SANDBOX_OK) {
    ts_buf_puts(&b, ",\"value\":");
    ts_buf_append(&b, r->value_json ? r->value_json : "null",
                  r->value_json ? r->value_len : 4);
  } else {
    ts_buf_puts(&b, ",\"error\":");
    const char *e = r->error ? r->error : ts_sandbox_status_name(r->status);
    ts_buf_append_json_string(&b, e, strlen(e));
  }
  ts_buf_puts(&b, ",\"console\":");
  ts_buf_append(&b, r->console_json ? r->console_json : "[]",
                r->console_json ? r->console_len : 2);
  if (r->console_truncated) ts_buf_puts(&b, ",\"console_truncated\":true");
  ts_buf_putc(&b, '}');
  if (b.err) {
    ts_buf_fini(&b);
    return NULL;
  }
  if (len) *len = b.len;
  return b.p; /* ts_buf keeps a NUL after the bytes */
}

/* ---- JavaScript tool modules ---------------------------------------------------------
 *
 * The prelude is one ES5 function expression; evaluated first in a module's heap, it
 * installs `z`, `defineTool`, `module` and `exports` as globals and returns the host's
 * helpers (describe: the definitions as plain data; run: find a tool, execute it, settle
 * its value), which stay on the C value stack and out of the module's reach. Doing the
 * walking in JavaScript keeps the C side to reading strings and arrays. */

/* Pieces, because ISO C caps a string literal at 4095 bytes. */
static const char *const prelude_src[] = {
    "(function (g) {\n"
    "'use strict';\n"
    "var defs = [];\n"
    "function copy(o) { return JSON.parse(JSON.stringify(o)); }\n"
    "function Z(schema, optional) { this._schema = schema; this._optional = !!optional; }\n"
    "Z.prototype.optional = function () { return new Z(copy(this._schema), true); };\n"
    "Z.prototype.describe = function (text) {\n"
    "  var s = copy(this._schema); s.description = String(text);\n"
    "  return new Z(s, this._optional);\n"
    "};\n"
    "function schemaOf(x, where) {\n"
    "  if (x instanceof Z) return copy(x._schema);\n"
    "  if (x !== null && typeof x === 'object' && !Array.isArray(x)) return copy(x);\n"
    "  throw new TypeError(where + ' must be a z schema or a JSON Schema object');\n"
    "}\n"
    "var z = {\n"
    "  string: function () { return new Z({type: 'string'}); },\n"
    "  number: function () { return new Z({type: 'number'}); },\n"
    "  boolean: function () { return new Z({type: 'boolean'}); },\n"
    "  array: function (item) { return new Z({type: 'array', items: schemaOf(item, 'z.array(item)')}); },\n"
    "  'enum': function (values) {\n"
    "    if (!Array.isArray(values) || !values.length) throw new TypeError('z.enum wants a non-empty array of strings');\n"
    "    for (var i = 0; i < values.length; i++)\n"
    "      if (typeof values[i] !== 'string') throw new TypeError('z.enum wants a non-empty array of strings');\n"
    "    return new Z({type: 'string', 'enum': values.slice()});\n"
    "  },\n"
    "  object: function (shape) {\n"
    "    if (shape === null || typeof shape !== 'object') throw new TypeError('z.object wants an object of schemas');\n"
    "    var props = {}, req = [], keys = Object.keys(shape);\n"
    "    for (var i = 0; i < keys.length; i++) {\n"
    "      var v = shape[keys[i]];\n"
    "      props[keys[i]] = schemaOf(v, 'z.object: property ' + keys[i]);\n"
    "      if (!(v instanceof Z && v._optional)) req.push(keys[i]);\n"
    "    }\n"
    "    var s = {type: 'object', properties: props};\n"
    "    if (req.length) s.required = req;\n"
    "    return new Z(s);\n"
    "  }\n"
    "};\n"
    "function defineTool(spec) {\n"
    "  if (spec === null || typeof spec !== 'object') throw new TypeError('defineTool wants an object');\n"
    "  if (typeof spec.execute !== 'function') throw new TypeError('defineTool: execute must be a function');\n"
    "  var d = {}, keys = Object.keys(spec);\n"
    "  for (var i = 0; i < keys.length; i++) d[keys[i]] = spec[keys[i]];\n"
    "  defs.push(d);\n"
    "  return d;\n"
    "}\n"
    "function isDef(x) { return x !== null && typeof x === 'object' && defs.indexOf(x) >= 0; }\n"
    "function collect(base) {\n"
    "  var out = [], seen = {};\n"
    "  function add(name, d, packed) {\n"
    "    if (typeof name !== 'string' || !name) throw new TypeError('a tool name must be a non-empty string');\n"
    "    if (seen.hasOwnProperty(name)) throw new Error('two tools named ' + JSON.stringify(name) + ' in one module');\n"
    "    seen[name] = true; out.push({name: name, def: d, packed: packed});\n"
    "  }\n"
    "  var ex = g.module && g.module.exports;\n"
    "  if (isDef(ex)) { add(ex.name !== undefined ? ex.name : base, ex, false); return out; }\n"
    "  if (ex !== null && typeof ex === 'object') {\n"
    "    var keys = Object.keys(ex);\n"
    "    for (var i = 0; i < keys.length; i++)\n"
    "      if (isDef(ex[keys[i]])) add(ex[keys[i]].name !== undefined ? ex[keys[i]].name : keys[i], ex[keys[i]], true);\n"
    "    if (out.length) return out;\n"
    "  }\n"
    "  if (defs.length === 1) { add(defs[0].name !== undefined ? defs[0].name : base, defs[0], false); return out; }\n"
    "  for (var j = 0; j < defs.length; j++) {\n"
    "    if (defs[j].name === undefined) throw new Error('this module defines ' + defs.length + ' tools: give each a name, or export them as an object of tools');\n"
    "    add(defs[j].name, defs[j], false);\n"
    "  }\n"
    "  if (!out.length) throw new Error('the module defines no tool (call defineTool)');\n"
    "  return out;\n"
    "}\n"
    "",
    "function describe(base) {\n"
    "  var all = collect(base), res = [];\n"
    "  for (var i = 0; i < all.length; i++) {\n"
    "    var e = all[i], d = e.def, w = 'tool ' + JSON.stringify(e.name) + ': ';\n"
    "    var r = {name: e.name, packed: e.packed};\n"
    "    r.description = d.description === undefined ? '' : String(d.description);\n"
    "    if (d.args !== undefined) r.args = JSON.stringify(schemaOf(d.args, w + 'args'));\n"
    "    if (d.progressArgument !== undefined) {\n"
    "      if (typeof d.progressArgument !== 'string') throw new TypeError(w + 'progressArgument must be a string');\n"
    "      r.progress = d.progressArgument;\n"
    "    }\n"
    "    if (d.annotations !== undefined) {\n"
    "      if (d.annotations === null || typeof d.annotations !== 'object' || Array.isArray(d.annotations))\n"
    "        throw new TypeError(w + 'annotations must be an object');\n"
    "      r.annotations = JSON.stringify(d.annotations);\n"
    "    }\n"
    "    r.variables = [];\n"
    "    if (d.variables !== undefined) {\n"
    "      if (!Array.isArray(d.variables)) throw new TypeError(w + 'variables must be an array');\n"
    "      for (var k = 0; k < d.variables.length; k++) {\n"
    "        var v = d.variables[k];\n"
    "        if (v === null || typeof v !== 'object' || typeof v.name !== 'string' || !v.name)\n"
    "          throw new TypeError(w + 'variables[' + k + '] needs a name');\n"
    "        r.variables.push({name: v.name, required: v.required === true, secret: v.type === 'secret',\n"
    "                          description: v.description === undefined ? '' : String(v.description)});\n"
    "      }\n"
    "    }\n"
    "    if (d.uses !== undefined) {\n"
    "      if (!Array.isArray(d.uses)) throw new TypeError(w + 'uses must be an array of names');\n"
    "      for (var u = 0; u < d.uses.length; u++)\n"
    "        if (typeof d.uses[u] !== 'string' || !d.uses[u]) throw new TypeError(w + 'uses must be an array of names');\n"
    "      r.uses = d.uses.slice();\n"
    "    }\n"
    "    res.push(r);\n"
    "  }\n"
    "  return res;\n"
    "}\n"
    "",
    "function settle(ret) {\n"
    "  if (ret === null || typeof ret !== 'object')\n"
    "    return [true, 'the tool returned ' + (ret === undefined ? 'nothing' : typeof ret) +\n"
    "      \", not {status: 'success', result} or {status: 'error', error}\"];\n"
    "  if (ret.status === 'success') { var j = JSON.stringify(ret.result); return [false, j === undefined ? 'null' : j]; }\n"
    "  if (ret.status === 'error') {\n"
    "    var e = ret.error;\n"
    "    if (typeof e === 'string') return [true, e];\n"
    "    if (e instanceof Error) return [true, String(e.message)];\n"
    "    var t = JSON.stringify(e);\n"
    "    return [true, t === undefined ? 'error' : t];\n"
    "  }\n"
    "  return [true, 'the tool returned status ' + JSON.stringify(ret.status) + \", not 'success' or 'error'\"];\n"
    "}\n"
    "function run(base, name, state, args) {\n"
    "  var all = collect(base);\n"
    "  for (var i = 0; i < all.length; i++)\n"
    "    if (all[i].name === name) return settle(all[i].def.execute.call(all[i].def, state, JSON.parse(args)));\n"
    "  throw new Error('the module no longer defines tool ' + JSON.stringify(name));\n"
    "}\n"
    "g.z = z;\n"
    "g.defineTool = defineTool;\n"
    "g.exports = {};\n"
    "g.module = {exports: g.exports};\n"
    "return {describe: describe, run: run};\n"
    "})"};

/* Evaluates the prelude and then the module; leaves the helpers object at index 0. */
static void eval_module(duk_context *ctx, sb_run *r, const char *module_name) {
  setup_globals(ctx); /* [global] */
  for (size_t i = 0; i < sizeof prelude_src / sizeof *prelude_src; i++)
    duk_push_string(ctx, prelude_src[i]);
  duk_concat(ctx, (duk_idx_t)(sizeof prelude_src / sizeof *prelude_src));
  duk_push_string(ctx, "prelude");
  duk_compile(ctx, DUK_COMPILE_EVAL);
  duk_call(ctx, 0); /* the function expression */
  duk_dup(ctx, -2);
  duk_call(ctx, 1); /* [global helpers] */
  duk_remove(ctx, -2);
  r->phase = PHASE_RUN;
  duk_push_lstring(ctx, r->code, r->code_len);
  duk_push_string(ctx, module_name);
  duk_compile(ctx, 0);
  duk_call(ctx, 0);
  duk_pop(ctx);
}

typedef struct {
  const char *module_name;
  ts_sandbox_tool_defs *defs;
  int oom;
} load_ctx;

/* The string property `key` of the object at `idx`, copied (UTF-8); NULL when absent or
 * not a string (or out of memory: *oom set). */
static char *get_str(duk_context *ctx, duk_idx_t idx, const char *key, int *oom) {
  char *s = NULL;
  duk_get_prop_string(ctx, idx, key);
  if (duk_is_string(ctx, -1)) {
    duk_size_t n;
    const char *p = duk_get_lstring(ctx, -1, &n);
    s = dup_fixed(p, n, NULL);
    if (!s) *oom = 1;
  }
  duk_pop(ctx);
  return s;
}

static int get_bool(duk_context *ctx, duk_idx_t idx, const char *key) {
  duk_get_prop_string(ctx, idx, key);
  int v = duk_get_boolean(ctx, -1) ? 1 : 0;
  duk_pop(ctx);
  return v;
}

static duk_ret_t load_body(duk_context *ctx, void *udata) {
  sb_run *r = udata;
  load_ctx *lx = r->extra;
  eval_module(ctx, r, lx->module_name);
  duk_get_prop_string(ctx, 0, "describe");
  duk_push_string(ctx, lx->module_name);
  duk_call(ctx, 1); /* [helpers list] */
  duk_size_t n = duk_get_length(ctx, -1);
  ts_sandbox_tool_defs *d = lx->defs;
  d->v = n ? calloc(n, sizeof *d->v) : NULL;
  if (n && !d->v) {
    lx->oom = 1;
    n = 0;
  }
  for (duk_size_t i = 0; i < n && !lx->oom; i++) {
    ts_sandbox_tool_def *t = &d->v[i];
    d->n++;
    duk_get_prop_index(ctx, -1, (duk_uarridx_t)i); /* [.. list def] */
    duk_idx_t e = duk_get_top_index(ctx);
    t->name = get_str(ctx, e, "name", &lx->oom);
    t->description = get_str(ctx, e, "description", &lx->oom);
    t->args_schema = get_str(ctx, e, "args", &lx->oom);
    t->progress_arg = get_str(ctx, e, "progress", &lx->oom);
    t->annotations = get_str(ctx, e, "annotations", &lx->oom);
    t->packed = get_bool(ctx, e, "packed");
    duk_get_prop_string(ctx, e, "variables");
    duk_size_t nv = duk_get_length(ctx, -1);
    t->vars = nv ? calloc(nv, sizeof *t->vars) : NULL;
    if (nv && !t->vars) lx->oom = 1, nv = 0;
    for (duk_size_t k = 0; k < nv; k++) {
      duk_get_prop_index(ctx, -1, (duk_uarridx_t)k);
      ts_sandbox_tool_var *v = &t->vars[t->n_vars++];
      v->name = get_str(ctx, -1, "name", &lx->oom);
      v->description = get_str(ctx, -1, "description", &lx->oom);
      v->required = get_bool(ctx, -1, "required");
      v->secret = get_bool(ctx, -1, "secret");
      duk_pop(ctx);
    }
    duk_pop(ctx);
    duk_get_prop_string(ctx, e, "uses");
    if (duk_is_array(ctx, -1)) {
      duk_size_t nu = duk_get_length(ctx, -1);
      t->has_uses = 1;
      t->uses = calloc(nu ? nu : 1, sizeof *t->uses);
      if (!t->uses) lx->oom = 1, nu = 0;
      for (duk_size_t k = 0; k < nu; k++) {
        duk_get_prop_index(ctx, -1, (duk_uarridx_t)k);
        duk_size_t sl;
        const char *sp = duk_get_lstring(ctx, -1, &sl);
        t->uses[t->n_uses] = dup_fixed(sp ? sp : "", sp ? sl : 0, NULL);
        if (!t->uses[t->n_uses++]) lx->oom = 1;
        duk_pop(ctx);
      }
    }
    duk_pop_2(ctx);
    if (!t->name || !t->description) lx->oom = 1;
  }
  r->value = dup_fixed("null", 4, NULL);
  return 0;
}

void ts_sandbox_tool_defs_free(ts_sandbox_tool_defs *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n; i++) {
    ts_sandbox_tool_def *t = &d->v[i];
    free(t->name);
    free(t->description);
    free(t->args_schema);
    free(t->progress_arg);
    free(t->annotations);
    for (size_t k = 0; k < t->n_vars; k++) {
      free(t->vars[k].name);
      free(t->vars[k].description);
    }
    free(t->vars);
    for (size_t k = 0; k < t->n_uses; k++) free(t->uses[k]);
    free(t->uses);
  }
  free(d->v);
  memset(d, 0, sizeof *d);
}

int ts_sandbox_load_tools(const char *src, size_t len, const char *module_name,
                          const ts_sandbox_opts *o, ts_sandbox_tool_defs *out, char *why,
                          size_t why_cap) {
  memset(out, 0, sizeof *out);
  load_ctx lx = {module_name ? module_name : "tool", out, 0};
  ts_sandbox_result res;
  sb_exec(src, len, o, load_body, &lx, &res);
  int rc = 0;
  if (res.status != TS_SANDBOX_OK) {
    snprintf(why, why_cap, "%s", res.error ? res.error : "out of memory (host)");
    rc = res.code ? res.code : TS_E_NOMEM;
  } else if (lx.oom) {
    snprintf(why, why_cap, "out of memory (host)");
    rc = TS_E_NOMEM;
  }
  ts_sandbox_result_fini(&res);
  if (rc) ts_sandbox_tool_defs_free(out);
  return rc;
}

/* ---- a tool's run ---------------------------------------------------------------------- */

typedef struct {
  const char *module_name, *tool, *args;
  size_t args_len;
  const ts_sandbox_host *host;
  int is_error;
  char *text;
  size_t text_len;
} call_ctx;

/* Host time does not count against the tool's own limit: the deadline moves by it. */
static void resume_clock(sb_run *r, uint64_t paused_at) { r->deadline_ns += now_ns() - paused_at; }

static call_ctx *call_of(duk_context *ctx, sb_run **rp) {
  sb_run *r = run_of(ctx);
  if (rp) *rp = r;
  return r->extra;
}

static duk_ret_t state_env(duk_context *ctx) {
  call_ctx *cx = call_of(ctx, NULL);
  const char *name = duk_require_string(ctx, 0);
  if (!cx->host || !cx->host->env) return duk_error(ctx, DUK_ERR_ERROR, "state.env is not available here");
  const char *value = NULL;
  char err[256] = "";
  int rc = cx->host->env(cx->host->user, name, &value, err, sizeof err);
  if (rc < 0) return duk_error(ctx, DUK_ERR_ERROR, "%s", err[0] ? err : "state.env failed");
  if (rc == 0 || !value) return 0; /* undefined */
  duk_push_string(ctx, value);
  return 1;
}

/* [args] -> JSON text of args ("{}" for undefined), malloc'd as UTF-8; throws on a value
 * JSON cannot encode. */
static char *args_json_of(duk_context *ctx, duk_idx_t idx, size_t *len) {
  if (duk_is_undefined(ctx, idx)) {
    *len = 2;
    return dup_fixed("{}", 2, NULL);
  }
  duk_dup(ctx, idx);
  duk_json_encode(ctx, -1);
  duk_size_t n;
  const char *s = duk_get_lstring(ctx, -1, &n);
  char *d = dup_fixed(s ? s : "null", s ? n : 4, len);
  duk_pop(ctx);
  return d;
}

typedef struct {
  const char *p;
  size_t n;
  int is_error;
} push_res;

/* Builds {status, result|error} from the host's answer; inside a safe call so that a
 * failure to allocate cannot leak the host's text. */
static duk_ret_t push_result_obj(duk_context *ctx, void *udata) {
  push_res *pr = udata;
  duk_push_object(ctx);
  duk_push_string(ctx, pr->is_error ? "error" : "success");
  duk_put_prop_string(ctx, -2, "status");
  duk_push_lstring(ctx, pr->p, pr->n);
  if (!pr->is_error) {
    if (duk_safe_call(ctx, json_decode_top, NULL, 1, 1) != DUK_EXEC_SUCCESS) {
      duk_pop(ctx); /* not JSON after all: give the text */
      duk_push_lstring(ctx, pr->p, pr->n);
    }
  }
  duk_put_prop_string(ctx, -2, pr->is_error ? "error" : "result");
  return 1;
}

static duk_ret_t state_invoke(duk_context *ctx) {
  sb_run *r;
  call_ctx *cx = call_of(ctx, &r);
  const char *name = duk_require_string(ctx, 0);
  if (!cx->host || !cx->host->invoke)
    return duk_error(ctx, DUK_ERR_ERROR, "state.invokeTool is not available here");
  size_t alen;
  char *args = args_json_of(ctx, 1, &alen);
  if (!args) return duk_error(ctx, DUK_ERR_ERROR, "out of memory (host)");
  int is_error = 1;
  char *text = NULL;
  size_t tlen = 0;
  uint64_t t = now_ns();
  cx->host->invoke(cx->host->user, name, args, alen, &is_error, &text, &tlen);
  resume_clock(r, t);
  free(args);
  push_res pr = {text ? text : "out of memory (host)", text ? tlen : 20, text ? is_error : 1};
  int rc = duk_safe_call(ctx, push_result_obj, &pr, 0, 1);
  free(text);
  if (rc != DUK_EXEC_SUCCESS) return duk_throw(ctx);
  return 1;
}

static duk_ret_t state_queue(duk_context *ctx) {
  sb_run *r;
  call_ctx *cx = call_of(ctx, &r);
  const char *name = duk_require_string(ctx, 0);
  if (!cx->host || !cx->host->queue)
    return duk_error(ctx, DUK_ERR_ERROR, "state.queueTool is not available here");
  size_t alen;
  char *args = args_json_of(ctx, 1, &alen);
  if (!args) return duk_error(ctx, DUK_ERR_ERROR, "out of memory (host)");
  char err[512] = "";
  uint64_t t = now_ns();
  int rc = cx->host->queue(cx->host->user, name, args, alen, err, sizeof err);
  resume_clock(r, t);
  free(args);
  if (rc) return duk_error(ctx, DUK_ERR_ERROR, "%s", err[0] ? err : "queueTool failed");
  return 0;
}

static duk_ret_t state_runcode(duk_context *ctx) {
  sb_run *r = run_of(ctx);
  duk_size_t clen;
  const char *code = duk_require_lstring(ctx, 0, &clen);
  ts_sandbox_opts o;
  memset(&o, 0, sizeof o);
  if (duk_is_object(ctx, 1)) {
    if (duk_get_prop_string(ctx, 1, "timeoutMs") && duk_is_number(ctx, -1)) {
      double v = duk_get_number(ctx, -1);
      if (v >= 1 && v < (double)r->timeout_ms) o.timeout_ms = (uint32_t)v;
    }
    duk_pop(ctx);
    if (duk_get_prop_string(ctx, 1, "memoryLimitBytes") && duk_is_number(ctx, -1)) {
      double v = duk_get_number(ctx, -1);
      if (v >= 1 && v < (double)r->limit) o.memory_limit_bytes = (size_t)v;
    }
    duk_pop(ctx);
    duk_get_prop_string(ctx, 1, "input"); /* stays on the stack while the run uses it */
    if (!duk_is_undefined(ctx, -1)) {
      duk_json_encode(ctx, -1);
      duk_size_t il;
      o.input_json = duk_get_lstring(ctx, -1, &il);
      o.input_len = il;
    }
  }
  if (!o.timeout_ms) o.timeout_ms = r->timeout_ms; /* never longer than the tool's own */
  if (!o.memory_limit_bytes) o.memory_limit_bytes = r->limit;
  o.cancel = r->cancel;
  o.cancel_flag = r->cancel_flag;
  ts_sandbox_result res;
  uint64_t t = now_ns();
  ts_sandbox_run(code, clen, &o, &res);
  resume_clock(r, t);
  size_t n = 0;
  char *json = ts_sandbox_result_json(&res, &n);
  ts_sandbox_result_fini(&res);
  if (!json) return duk_error(ctx, DUK_ERR_ERROR, "out of memory (host)");
  push_res pr = {json, n, 0};
  int rc = duk_safe_call(ctx, push_result_obj, &pr, 0, 1);
  free(json);
  if (rc != DUK_EXEC_SUCCESS) return duk_throw(ctx);
  duk_get_prop_string(ctx, -1, "result"); /* the decoded object, without our wrapper */
  return 1;
}

static duk_ret_t call_body(duk_context *ctx, void *udata) {
  sb_run *r = udata;
  call_ctx *cx = r->extra;
  eval_module(ctx, r, cx->module_name);
  duk_get_prop_string(ctx, 0, "run");
  duk_push_string(ctx, cx->module_name);
  duk_push_string(ctx, cx->tool);
  duk_push_object(ctx);
  static const struct {
    const char *name;
    duk_c_function fn;
    duk_idx_t nargs;
  } fns[] = {{"env", state_env, 1},
             {"invokeTool", state_invoke, 2},
             {"queueTool", state_queue, 2},
             {"runCode", state_runcode, 2}};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
    duk_push_c_function(ctx, fns[i].fn, fns[i].nargs);
    duk_put_prop_string(ctx, -2, fns[i].name);
  }
  duk_push_string(ctx, cx->tool);
  duk_put_prop_string(ctx, -2, "tool");
  duk_push_lstring(ctx, cx->args, cx->args_len);
  duk_call(ctx, 4); /* [helpers [is_error, text]] */
  r->phase = PHASE_VALUE;
  duk_get_prop_index(ctx, -1, 0);
  cx->is_error = duk_to_boolean(ctx, -1);
  duk_pop(ctx);
  duk_get_prop_index(ctx, -1, 1);
  duk_size_t n;
  const char *s = duk_to_lstring(ctx, -1, &n);
  cx->text = dup_fixed(s, n, &cx->text_len);
  r->value = dup_fixed("null", 4, NULL);
  if (!cx->text) {
    free(r->value);
    r->value = NULL; /* classify: out of memory (host) */
  }
  return 0;
}

void ts_sandbox_tool_result_fini(ts_sandbox_tool_result *r) {
  if (!r) return;
  free(r->text);
  memset(r, 0, sizeof *r);
}

int ts_sandbox_call_tool(const char *src, size_t len, const char *module_name, const char *tool,
                         const char *args_json, size_t args_len, const ts_sandbox_host *host,
                         const ts_sandbox_opts *o, ts_sandbox_tool_result *out) {
  memset(out, 0, sizeof *out);
  call_ctx cx = {module_name ? module_name : "tool", tool ? tool : "", args_json ? args_json : "{}",
                 args_json ? args_len : 2, host, 1, NULL, 0};
  ts_sandbox_opts oo;
  if (o) oo = *o;
  else memset(&oo, 0, sizeof oo);
  oo.input_json = NULL;
  oo.input_len = 0;
  ts_sandbox_result res;
  sb_exec(src, len, &oo, call_body, &cx, &res);
  out->status = res.status;
  out->elapsed_ms = res.elapsed_ms;
  out->memory_peak = res.memory_peak;
  int rc = 0;
  if (res.status == TS_SANDBOX_OK && cx.text) {
    out->is_error = cx.is_error;
    out->text = cx.text;
    out->len = cx.text_len;
    cx.text = NULL;
  } else {
    char msg[600];
    out->is_error = 1;
    if (res.status == TS_SANDBOX_TIMEOUT)
      snprintf(msg, sizeof msg, "timed out: the tool ran longer than its limit of %lu ms",
               (unsigned long)(oo.timeout_ms ? oo.timeout_ms : TS_SANDBOX_DEFAULT_TIMEOUT_MS));
    else
      snprintf(msg, sizeof msg, "%s", res.error ? res.error : "out of memory (host)");
    out->text = dup_fixed(msg, strlen(msg), &out->len);
    if (!out->text || !res.error) rc = TS_E_NOMEM;
    if (res.status == TS_SANDBOX_OK) out->status = TS_SANDBOX_ERROR;
  }
  free(cx.text);
  ts_sandbox_result_fini(&res);
  return rc;
}
