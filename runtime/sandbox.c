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
#include "sandbox.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duk/ts_duk_config.h"
#include <duktape.h>

#include "error.h"
#include "strbuf.h"

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
  ts_sandbox_cancel *cancel;
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

static duk_ret_t run_body(duk_context *ctx, void *udata) {
  sb_run *r = udata;

  /* Isolation: only ECMAScript built-ins, console and input remain. */
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

int ts_sandbox_run(const char *code, size_t len, const ts_sandbox_opts *o, ts_sandbox_result *out) {
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
  r->cancel = o->cancel;
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
  int rc = duk_safe_call(r->ctx, run_body, r, 0, 1);
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
