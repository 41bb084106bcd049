/*
 * sandbox.c: state.runCode and JavaScript tool modules on Duktape (the only includer of
 * duktape.h).
 *
 * Two processes per run. Duktape checks its deadline only between bytecode
 * instructions, and one native built-in (a join over 1e8 elements, a sort, a JSON
 * encode of a huge value, a backtracking RegExp) can run for minutes without reaching
 * one. So every run happens in a forked child, and the calling thread stays in the
 * parent, where it watches the deadline, the terminate handle and the cancel flag and
 * kills the child (SIGKILL, its whole process group) when either fires. Inside the
 * child the interrupt check still stops ordinary loops at the deadline with a proper
 * result; the kill is for what the check cannot reach, SB_KILL_GRACE_MS later. The
 * margin we promise is SB_MARGIN_MS (docs/sandbox.md).
 *
 * The child talks to the parent over a socketpair in frames (type byte, 32-bit length,
 * payload): console entries as they are printed (so they survive a kill, and a caller
 * can show them live), host requests of a tool (state.env, invokeTool, queueTool: the
 * parent serves them with the caller's callbacks and answers; their time does not count
 * against the run), and at the end the result and the body's extra data (a tool's
 * answer, a module's definitions). The parent never trusts a frame: sizes are capped,
 * a malformed frame or a dead child is an error result.
 *
 * The heap snapshot. The first run in a process builds a template heap (isolated
 * globals, the prelude of ES2015+ built-ins, runtime/js/prelude.js, and the tool kit,
 * runtime/js/toolkit.js, parked in the heap's stash) and never runs anything else in
 * it. fork() gives each child a copy-on-write copy of that heap, so the prelude is
 * loaded once per process, every run still starts from the same pristine state, and no
 * run ever sees another's. A run nested inside a child (state.runCode from a tool)
 * cannot use the child's heap, which the tool has touched: it forks again and builds
 * its heap afresh. Math.random is reseeded per child (the template's seed would repeat).
 *
 * Modern JavaScript and TypeScript: source is brought down to what Duktape runs by
 * runtime/js/transpile.js, run in a second template heap of its own (never the one that
 * runs the code), in the child; its output is sent back and cached in the parent by
 * content (docs/sandbox.md says why this mechanism).
 *
 * In the heap, three hooks Duktape gives an embedder land on the run's `sb_run`:
 *
 *   - the allocator (sb_alloc/sb_realloc/sb_free) puts a small header before every
 *     block, holding its size and links in a list of the run's live blocks. The size
 *     makes the cap exact (`used` is the sum of live request sizes, refused past
 *     `limit`); the list lets a run whose heap hit a fatal error free everything.
 *   - the execution-timeout check (ts__sandbox_timeout_check, wired in by
 *     runtime/js/duk/ts_duk_config.h) runs every 256 Ki instructions. It is sticky: once it
 *     has said "stop" it says so forever, which is what makes Duktape rethrow at every
 *     instruction until the error is out of the script, so `catch` cannot swallow it.
 *   - the fatal handler, which must not return: it longjmps back to the child's run.
 *
 * Out-of-memory inside the heap: when a request is refused, Duktape runs mark-and-sweep
 * and retries, up to 10 times, before it throws "alloc failed"; a refusal alone is
 * therefore not yet "exceeded". We count refusals in a row without a successful growth
 * in between; more than Duktape's retries means it has given up, and the run is marked
 * out of memory (sticky, like a timeout).
 *
 * Strings leave the heap in Duktape's internal encoding, CESU-8-like UTF-8 in which a
 * character outside the BMP is two 3-byte surrogates; cesu_fix() rewrites them in
 * place to UTF-8 (never longer), so the value and the console are valid JSON.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "js/sandbox.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "js/duk/ts_duk_config.h"
#include <duktape.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "js/js_sources.h"

/* Duktape's DUK_HEAP_ALLOC_FAIL_MARKANDSWEEP_LIMIT: a failed allocation is retried after
 * this many garbage collections before Duktape gives up. */
#define SB_DUK_ALLOC_RETRIES 10

/* How long past its deadline a child may take to stop by itself (the interrupt check
 * runs about every millisecond of bytecode) before the parent kills it; and how often
 * the parent looks at the terminate handle and the cancel flag while it waits. The
 * promised margin, SB_MARGIN_MS, is their sum plus the time to reap a killed process,
 * with room for a loaded machine. */
#define SB_KILL_GRACE_MS 15u
#define SB_TICK_MS 5
#define SB_MARGIN_MS 50u

/* The template heaps are built under this cap and deadline (our own code, but a cap on
 * everything). */
#define SB_BUILD_LIMIT ((size_t)64 << 20)
#define SB_BUILD_TIMEOUT_MS 10000u

/* The least memory the transpiler's heap may use, whatever the run's own cap. */
#define SB_TX_MIN_LIMIT ((size_t)16 << 20)

/* A frame from a child larger than its memory limit plus this is malformed (nothing in
 * a heap of that size can produce it). */
#define SB_FRAME_SLACK ((size_t)1 << 20)

enum { STOP_NONE, STOP_TIMEOUT, STOP_TERMINATED, STOP_OOM };
enum { PHASE_SETUP, PHASE_INPUT, PHASE_TRANSPILE, PHASE_RUN, PHASE_VALUE };

/* Frame types. */
enum {
  FR_CONSOLE = 'C', /* child -> parent: one console entry */
  FR_HOST = 'H',    /* child -> parent: a host request; the parent answers FR_REPLY */
  FR_REPLY = 'h',
  FR_CODE = 'T',    /* child -> parent: the transpiled source, for the cache */
  FR_BYTECODE = 'B', /* child -> parent: its compiled bytecode, for the cache */
  FR_EXTRA = 'X',   /* child -> parent: the body's own data */
  FR_RESULT = 'R'   /* child -> parent: the result; the last frame */
};

/* The header before each block; the union keeps the payload max-aligned. */
typedef union sb_blk {
  struct {
    union sb_blk *prev, *next;
    size_t size;
  } h;
  max_align_t align;
} sb_blk;

typedef struct sb_run {
  sb_blk head; /* sentinel of the circular list of live blocks */
  size_t used, limit, peak;
  size_t base; /* bytes the heap held when the run began (the template's) */
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
  int language; /* TS_SANDBOX_LANG_* */
  int cached;   /* code is already transpiled (the parent's cache) */
  const unsigned char *bc; /* its bytecode from the parent's cache, or NULL */
  size_t bc_len;
  int send_bc; /* send what the compiler made to the parent, for its cache */
  int arena;   /* a template's copy in a child: blocks from the arena (sb_alloc) */
  const char *filename; /* for messages: "code" or the module's name */
  char *value;
  size_t value_len;

  ts_buf console; /* the JSON array being built, without its closing bracket (parent) */
  size_t console_limit;
  int console_entries, console_full;
  size_t console_sent; /* bytes of console sent to the parent (child) */

  int link; /* the child's end of the socketpair; -1 in the parent and in-process */
  const ts_sandbox_host *host;
  uint64_t rng[2]; /* Math.random's state (xorshift128+) */

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

static const char *cancel_reason(ts_sandbox_cancel *c, const volatile int *flag) {
  if (c) {
    const char *why = atomic_load_explicit(&c->reason, memory_order_acquire);
    if (why) return why;
  }
  if (flag && *flag) return "the call was cancelled";
  return NULL;
}

/* ---- the interrupt check and Math.random ------------------------------------------ */

int ts__sandbox_timeout_check(void *udata) {
  sb_run *r = udata;
  if (r->stop) return 1;
  const char *why = cancel_reason(r->cancel, r->cancel_flag);
  if (why) {
    r->term_reason = why;
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

double ts__sandbox_random(void *udata) {
  sb_run *r = udata;
  uint64_t s1 = r->rng[0];
  const uint64_t s0 = r->rng[1];
  r->rng[0] = s0;
  s1 ^= s1 << 23;
  r->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
  return (double)((r->rng[1] + s0) >> 11) / 9007199254740992.0; /* [0, 1) from 53 bits */
}

static void seed_rng(sb_run *r) {
  uint64_t s[2] = {0, 0};
  if (getrandom(s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
    s[0] = now_ns() ^ ((uint64_t)getpid() << 32);
    s[1] = s[0] * 0x9E3779B97F4A7C15ull;
  }
  r->rng[0] = s[0] | 1;
  r->rng[1] = s[1] | 2;
}

/* ---- the capping allocator -------------------------------------------------------- */

static void *sb_refuse(sb_run *r) {
  r->refused_total++;
  r->refused_in_a_row++;
  /* Duktape gave up on one allocation: every garbage collection it tried left too little.
   * A refusal that a collection then cures is how garbage is reclaimed at the cap (the
   * heap has no reference counts, ts_duk_config.h), not yet out of memory; a script that
   * catches the give-up is stopped by it (the flag is sticky). */
  if (r->refused_in_a_row > SB_DUK_ALLOC_RETRIES) r->oom = 1;
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

/* In a child, the heaps allocate from a fresh arena. The template's blocks sit in pages
 * the child shares copy-on-write with its parent, and glibc's malloc would reuse the free
 * chunks between them and write their neighbours' headers (as would the list of live
 * blocks): every such write copies a page, and a run spent more time in those page faults
 * than in its script. So, in a child: new blocks are cut from one anonymous mapping in
 * order (pages it touches are fresh, and adjacent); a freed block is only subtracted from
 * `used` (a template block is left where it is, an arena block is not reused; the process
 * ends with the run); the live-block list is not kept (nothing walks it there). Past the
 * arena, blocks come from malloc again. The arena bounds the garbage a child holds on to
 * (SB_ARENA_BYTES); the cap still counts live bytes exactly. */
#define SB_ARENA_BYTES ((size_t)8 << 20)
static char sb_tag_arena, sb_tag_malloc; /* h.prev of a child's blocks: which kind */
static unsigned char *arena_p, *arena_end, *arena_last;

/* Maps the arena (reserved address space, no page until a child writes one): done once
 * in the parent, so that every child inherits it instead of paying for a mapping. */
static void arena_map(void) {
  if (arena_p) return;
  void *m = mmap(NULL, SB_ARENA_BYTES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return;
  arena_p = m;
  arena_end = arena_p + SB_ARENA_BYTES;
}

static void *arena_take(size_t total) {
  if (!arena_p) arena_map();
  if (!arena_p) return NULL;
  total = (total + sizeof(sb_blk) - 1) / sizeof(sb_blk) * sizeof(sb_blk);
  if (total > (size_t)(arena_end - arena_p)) return NULL;
  arena_last = arena_p;
  arena_p += total;
  return arena_last;
}

static sb_blk *child_block(size_t size) {
  sb_blk *b = size <= SB_ARENA_BYTES / 4 ? arena_take(sizeof *b + size) : NULL;
  if (b) {
    b->h.prev = (sb_blk *)(void *)&sb_tag_arena;
  } else {
    b = malloc(sizeof *b + size);
    if (!b) return NULL;
    b->h.prev = (sb_blk *)(void *)&sb_tag_malloc;
  }
  b->h.size = size;
  return b;
}

static void *sb_alloc(void *udata, duk_size_t size) {
  sb_run *r = udata;
  sb_poll(r);
  if (size == 0) return NULL;
  if (r->used >= r->limit || size > r->limit - r->used || size > SIZE_MAX - sizeof(sb_blk))
    return sb_refuse(r);
  sb_blk *b;
  if (r->arena) {
    b = child_block(size);
    if (!b) return sb_refuse(r);
  } else {
    b = malloc(sizeof *b + size);
    if (!b) return sb_refuse(r);
    sb_link(r, b, size);
  }
  r->used += size;
  sb_grew(r);
  return b + 1;
}

static void sb_free(void *udata, void *ptr) {
  sb_run *r = udata;
  if (!ptr) return;
  sb_blk *b = (sb_blk *)ptr - 1;
  r->used -= b->h.size;
  if (!r->arena) {
    sb_unlink(b);
    free(b);
  } else if (b->h.prev == (sb_blk *)(void *)&sb_tag_malloc) {
    free(b);
  } else if ((unsigned char *)b == arena_last) { /* the newest arena block: give it back */
    arena_p = arena_last;
    arena_last = NULL;
  }
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
  if (size > old && (r->used >= r->limit || size - old > r->limit - r->used ||
                     size > SIZE_MAX - sizeof(sb_blk)))
    return sb_refuse(r);
  if (r->arena) {
    sb_blk *nb;
    if ((unsigned char *)b == arena_last &&
        sizeof *b + size <= (size_t)(arena_end - arena_last)) { /* grows in place */
      arena_p = arena_last;
      nb = arena_take(sizeof *b + size);
      nb->h.size = size;
    } else if (b->h.prev == (sb_blk *)(void *)&sb_tag_malloc) {
      nb = realloc(b, sizeof *nb + size);
      if (!nb) return sb_refuse(r);
      nb->h.size = size;
    } else { /* a template or older arena block: a new one, and the old one left */
      nb = child_block(size);
      if (!nb) return sb_refuse(r);
      memcpy(nb + 1, b + 1, old < size ? old : size);
    }
    r->used = r->used - old + size;
    if (size > old) sb_grew(r);
    return nb + 1;
  }
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

/* ---- frames ------------------------------------------------------------------------ */

static int write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n) {
  char *s = p;
  while (n) {
    ssize_t g = recv(fd, s, n, 0);
    if (g < 0 && errno == EINTR) continue;
    if (g <= 0) return -1;
    s += g;
    n -= (size_t)g;
  }
  return 0;
}

static void put_u32(ts_buf *b, uint32_t v) {
  unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  ts_buf_append(b, x, 4);
}

/* A string field: its length and bytes; NULL is the length 0xFFFFFFFF. */
static void put_str(ts_buf *b, const char *s, size_t n) {
  if (!s) {
    put_u32(b, 0xFFFFFFFFu);
    return;
  }
  if (n >= 0xFFFFFFFFu) {
    b->err = TS_E_LIMIT;
    return;
  }
  put_u32(b, (uint32_t)n);
  ts_buf_append(b, s, n);
}

static int frame_send(int fd, int type, const char *p, size_t n) {
  if (n >= 0xFFFFFFFFu) return -1;
  unsigned char h[5] = {(unsigned char)type, (unsigned char)n, (unsigned char)(n >> 8),
                        (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
  if (write_all(fd, h, 5)) return -1;
  return n ? write_all(fd, p, n) : 0;
}

/* A cursor over a received payload; every read checks the bounds (a short or garbled
 * payload sets `bad`, and reads then give zeros). */
typedef struct {
  const unsigned char *p;
  size_t n, at;
  int bad;
} cur;

static uint32_t get_u32(cur *c) {
  if (c->bad || c->n - c->at < 4) {
    c->bad = 1;
    return 0;
  }
  const unsigned char *x = c->p + c->at;
  c->at += 4;
  return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
}

/* A string field, copied and NUL-terminated (NULL for a NULL field; `oom` set when the
 * copy fails). */
static char *get_str_field(cur *c, size_t *len, int *oom) {
  uint32_t n = get_u32(c);
  if (len) *len = 0;
  if (c->bad || n == 0xFFFFFFFFu) return NULL;
  if (c->n - c->at < n) {
    c->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) {
    *oom = 1;
    c->at += n;
    return NULL;
  }
  memcpy(s, c->p + c->at, n);
  s[n] = '\0';
  c->at += n;
  if (len) *len = n;
  return s;
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


/* In the child, an entry goes to the parent at once (cut to the limit: the parent cuts
 * it properly and keeps the array); past the limit nothing more is sent. */
static void console_out(sb_run *r, const char *s, size_t n) {
  if (r->link < 0) {
    console_add(r, s, n);
    return;
  }
  if (r->console_sent > r->console_limit) return;
  size_t take = n < r->console_limit + 8 ? n : r->console_limit + 8;
  char *tmp = dup_fixed(s, take, &take);
  if (!tmp) return;
  if (frame_send(r->link, FR_CONSOLE, tmp, take)) _exit(3); /* the parent is gone */
  free(tmp);
  r->console_sent += take + 1;
}

static duk_ret_t console_log(duk_context *ctx) {
  sb_run *r = run_of(ctx);
  if (r->console_full || r->console_sent > r->console_limit) return 0;
  duk_idx_t n = duk_get_top(ctx);
  /* Join the arguments with spaces into one string inside the heap (it is capped by
   * the heap's memory limit), then copy it out. */
  for (duk_idx_t i = 0; i < n; i++) {
    if (duk_is_object(ctx, i) && !duk_is_function(ctx, i) && !duk_is_error(ctx, i)) {
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
  console_out(r, s ? s : "", s ? len : 0);
  return 0;
}

/* ---- host services the prelude uses ------------------------------------------------ */

/* __sleep(ms): waits for a timer (setTimeout) without spinning; wakes at the deadline,
 * a stop, or after `ms`, whichever is first, in slices short enough to notice a stop. */
static duk_ret_t host_sleep(duk_context *ctx) {
  sb_run *r = run_of(ctx);
  double ms = duk_to_number(ctx, 0);
  if (!(ms > 0)) return 0;
  uint64_t until = now_ns() + (uint64_t)(ms > 864e5 ? 864e5 : ms) * 1000000u;
  for (;;) {
    uint64_t t = now_ns();
    if (t >= until || ts__sandbox_timeout_check(r)) break;
    uint64_t left = until - t, end = r->deadline_ns > t ? r->deadline_ns - t : 0;
    if (end < left) left = end + 1000000u;
    if (left > 2000000u) left = 2000000u;
    struct timespec ts = {0, (long)left};
    nanosleep(&ts, NULL);
  }
  if (r->stop) ts__duk_request_interrupt(ctx);
  return 0;
}

/* __now(): a monotonic clock in milliseconds, for timers (Date can be changed). */
static duk_ret_t host_now(duk_context *ctx) {
  duk_push_number(ctx, (double)now_ns() / 1e6);
  return 1;
}

/* ---- the template heaps ----------------------------------------------------------- */

static const char *const removed_globals[] = {"Duktape", "require", "print", "alert", "module",
                                              "exports"};

/* Pushes the value of one of our embedded files: bytecode made at build time by the same
 * Duktape build (js_sources.h), loaded without compiling. */
static void load_embedded(duk_context *ctx, const unsigned char *bc, size_t n) {
  duk_push_external_buffer(ctx);
  duk_config_buffer(ctx, -1, (void *)(uintptr_t)bc, n);
  duk_load_function(ctx);
  duk_call(ctx, 0); /* the file is one function expression: its value */
}

/* The runCode heap: isolation (only ECMAScript built-ins, console and the prelude), the
 * prelude run with the coroutine constructor (async functions need it; the script never
 * sees it), the tool kit factory and the prelude's hidden helpers in the stash. */
static duk_ret_t build_body(duk_context *ctx, void *udata) {
  (void)udata;
  duk_push_global_object(ctx);                   /* [g] */
  duk_get_prop_string(ctx, -1, "Duktape");       /* [g D] */
  duk_get_prop_string(ctx, -1, "Thread");        /* [g D T] */
  duk_remove(ctx, -2);                           /* [g T] */
  for (size_t i = 0; i < sizeof removed_globals / sizeof *removed_globals; i++)
    duk_del_prop_string(ctx, -2, removed_globals[i]);
  duk_push_object(ctx);
  static const char *const levels[] = {"log", "info", "warn", "error", "debug", "trace"};
  for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
    duk_push_c_function(ctx, console_log, DUK_VARARGS);
    duk_put_prop_string(ctx, -2, levels[i]);
  }
  duk_put_prop_string(ctx, -3, "console");
  duk_push_object(ctx); /* [g T host] */
  duk_push_c_function(ctx, host_sleep, 1);
  duk_put_prop_string(ctx, -2, "sleep");
  duk_push_c_function(ctx, host_now, 0);
  duk_put_prop_string(ctx, -2, "now");
  load_embedded(ctx, ts__js_prelude_bc, ts__js_prelude_bc_len); /* [g T host f] */
  duk_insert(ctx, -4);                                                     /* [f g T host] */
  duk_call(ctx, 3);                                                        /* [rt] */
  duk_push_global_stash(ctx);
  duk_dup(ctx, -2);
  duk_put_prop_string(ctx, -2, "rt");
  load_embedded(ctx, ts__js_toolkit_bc, ts__js_toolkit_bc_len);
  duk_put_prop_string(ctx, -2, "toolkit");
  return 0;
}

/* The transpiler's heap: nothing but transpile.js (it only ever sees source as data). */
static duk_ret_t build_tx_body(duk_context *ctx, void *udata) {
  (void)udata;
  duk_push_global_stash(ctx);
  load_embedded(ctx, ts__js_transpile_bc, ts__js_transpile_bc_len);
  duk_put_prop_string(ctx, -2, "transpile");
  return 0;
}

static void run_reset(sb_run *r) {
  r->head.h.prev = r->head.h.next = &r->head;
  r->link = -1;
}

/* A heap built on a new `sb_run` with `body`; NULL when out of memory or when the
 * build failed (the message in why). */
static sb_run *heap_build(duk_safe_call_function body, char *why, size_t why_cap) {
  sb_run *volatile r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(why, why_cap, "out of memory (host)");
    return NULL;
  }
  run_reset(r);
  r->limit = SB_BUILD_LIMIT;
  r->timeout_ms = SB_BUILD_TIMEOUT_MS;
  r->deadline_ns = now_ns() + (uint64_t)SB_BUILD_TIMEOUT_MS * 1000000u;
  r->console_limit = TS_SANDBOX_DEFAULT_CONSOLE_LIMIT;
  seed_rng(r);
  if (setjmp(r->fatal_jb)) {
    snprintf(why, why_cap, "sandbox setup failed: %s", r->fatal_msg);
    sb_free_all(r);
    free(r);
    return NULL;
  }
  r->ctx = duk_create_heap(sb_alloc, sb_realloc, sb_free, r, sb_fatal);
  if (!r->ctx) {
    snprintf(why, why_cap, "out of memory: cannot create a heap");
    sb_free_all(r);
    free(r);
    return NULL;
  }
  if (duk_safe_call(r->ctx, body, NULL, 0, 1) != DUK_EXEC_SUCCESS) {
    snprintf(why, why_cap, "sandbox setup failed: %s", duk_safe_to_string(r->ctx, -1));
    duk_destroy_heap(r->ctx);
    sb_free_all(r);
    free(r);
    return NULL;
  }
  duk_pop(r->ctx);
  /* Collect the build's garbage now, so that a run's cap starts from the template's live
   * bytes (garbage collected later would hand the run extra room). */
  duk_gc(r->ctx, 0);
  duk_gc(r->ctx, 0);
  return r;
}

/* The process's templates, built once (by the first run, on its thread) and then only
 * ever copied by fork(): the parent never runs anything in them. */
static pthread_once_t tmpl_once = PTHREAD_ONCE_INIT;
static sb_run *tmpl_run, *tmpl_tx;
static char tmpl_why[256];
static int sb_in_child; /* this process is a sandbox child */

/* The library functions only a child calls are bound by the dynamic linker at their
 * first call (lazy binding), which in every child would look the symbol up again and
 * write the GOT page (a copy-on-write fault): calling each harmlessly here binds it once,
 * in the parent, for all the children. */
static void warm_child_calls(void) {
  int v = 0;
  sigset_t set;
  struct sigaction sa;
  jmp_buf jb;
  volatile const char *a = "SyntaxError: ";
  (void)getppid();
  (void)prctl(PR_GET_PDEATHSIG, &v);
  sigemptyset(&set);
  (void)sigprocmask(SIG_BLOCK, NULL, &set);
  (void)sigaction(SIGINT, NULL, &sa);
  (void)send(-1, "", 0, MSG_NOSIGNAL); /* EBADF */
  v = strncmp((const char *)a, "SyntaxError: ", 13);
  if (!setjmp(jb)) longjmp(jb, 1);
  (void)v;
}

static void tmpl_init(void) {
  warm_child_calls();
  arena_map();
  tmpl_run = heap_build(build_body, tmpl_why, sizeof tmpl_why);
  if (tmpl_run) tmpl_tx = heap_build(build_tx_body, tmpl_why, sizeof tmpl_why);
}

/* ---- the code cache (parent) ------------------------------------------------------ */

/* What a source became, by content: its transpiled text and the Duktape bytecode that
 * compiling that text gave. The key is the whole of what the result depends on: the
 * language, the mode (a script is compiled as eval code, a module as a program, and the
 * transpiler treats `export` differently), the file name (it is in the bytecode, for
 * messages) and the source text, compared in full (a hash picks the slot). Bounded in
 * entries and bytes; the least recently used entry goes first.
 *
 * Why bytecode may be trusted here: Duktape's loader does not check what it loads, so
 * bytecode must never come from anything the script could have written. The child
 * compiles and dumps before it runs one instruction of the script (and the parent takes
 * these frames only before any other, docs/sandbox.md), so what arrives is the compiler's
 * own output, as trustworthy as compiling in the parent would be. */
#define SB_CACHE_ENTRIES 256
#define SB_CACHE_BYTES ((size_t)16 << 20)

typedef struct {
  int language, mode;
  const char *filename;
  const char *src;
  size_t len;
} cache_key;

typedef struct {
  uint64_t hash;
  int language, mode;
  char *filename, *src, *out;
  unsigned char *bc;
  size_t src_len, out_len, bc_len;
  uint64_t stamp;
} cache_entry;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_entry cache_v[SB_CACHE_ENTRIES];
static size_t cache_bytes;
static uint64_t cache_clock;

static uint64_t fnv1a(const cache_key *k) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)k->language ^ (uint64_t)k->mode << 8;
  for (const char *f = k->filename; *f; f++) h = (h ^ (unsigned char)*f) * 1099511628211ull;
  for (size_t i = 0; i < k->len; i++) h = (h ^ (unsigned char)k->src[i]) * 1099511628211ull;
  return h;
}

static size_t entry_bytes(const cache_entry *e) {
  return e->src_len + e->out_len + e->bc_len + strlen(e->filename);
}

static cache_entry *cache_find(const cache_key *k, uint64_t h) {
  for (size_t i = 0; i < SB_CACHE_ENTRIES; i++) {
    cache_entry *e = &cache_v[i];
    if (e->src && e->hash == h && e->language == k->language && e->mode == k->mode &&
        e->src_len == k->len && !strcmp(e->filename, k->filename) &&
        !memcmp(e->src, k->src, k->len))
      return e;
  }
  return NULL;
}

static void cache_drop(cache_entry *e) {
  cache_bytes -= entry_bytes(e);
  free(e->filename);
  free(e->src);
  free(e->out);
  free(e->bc);
  memset(e, 0, sizeof *e);
}

/* Copies of what is cached for k: 1 with *out (NUL-terminated) and, when there is
 * bytecode, *bc (else NULL); 0 when nothing is (or the host is out of memory). */
static int cache_get(const cache_key *k, char **out, size_t *out_len, unsigned char **bc,
                     size_t *bc_len) {
  uint64_t h = fnv1a(k);
  int found = 0;
  *out = NULL;
  *bc = NULL;
  pthread_mutex_lock(&cache_mu);
  cache_entry *e = cache_find(k, h);
  if (e) {
    *out = malloc(e->out_len + 1);
    *bc = e->bc ? malloc(e->bc_len) : NULL;
    if (*out && (*bc || !e->bc)) {
      memcpy(*out, e->out, e->out_len + 1);
      *out_len = e->out_len;
      if (*bc) memcpy(*bc, e->bc, e->bc_len);
      *bc_len = e->bc_len;
      e->stamp = ++cache_clock;
      found = 1;
    } else {
      free(*out);
      free(*bc);
      *out = NULL;
      *bc = NULL;
    }
  }
  pthread_mutex_unlock(&cache_mu);
  return found;
}

/* Stores (or replaces) what k became: the transpiled text and its bytecode (bc may be
 * NULL). Nothing is stored when it would not fit or the host is out of memory: the cache
 * only ever saves work. */
static void cache_put(const cache_key *k, const char *out, size_t out_len,
                      const unsigned char *bc, size_t bc_len) {
  size_t fl = strlen(k->filename);
  if (k->len + out_len + bc_len + fl > SB_CACHE_BYTES / 4) return; /* one never takes all */
  cache_entry n = {fnv1a(k), k->language, k->mode, malloc(fl + 1), malloc(k->len + 1),
                   malloc(out_len + 1), bc ? malloc(bc_len ? bc_len : 1) : NULL,
                   k->len, out_len, bc ? bc_len : 0, 0};
  if (!n.filename || !n.src || !n.out || (bc && !n.bc)) {
    free(n.filename);
    free(n.src);
    free(n.out);
    free(n.bc);
    return;
  }
  memcpy(n.filename, k->filename, fl + 1);
  memcpy(n.src, k->src, k->len);
  n.src[k->len] = '\0';
  memcpy(n.out, out, out_len);
  n.out[out_len] = '\0';
  if (bc) memcpy(n.bc, bc, bc_len);
  pthread_mutex_lock(&cache_mu);
  cache_entry *old = cache_find(k, n.hash);
  if (old) cache_drop(old);
  for (;;) { /* make room: the least recently used entry goes */
    size_t free_slot = SB_CACHE_ENTRIES, oldest = SB_CACHE_ENTRIES;
    for (size_t i = 0; i < SB_CACHE_ENTRIES; i++) {
      if (!cache_v[i].src) {
        if (free_slot == SB_CACHE_ENTRIES) free_slot = i;
      } else if (oldest == SB_CACHE_ENTRIES || cache_v[i].stamp < cache_v[oldest].stamp) {
        oldest = i;
      }
    }
    if (free_slot < SB_CACHE_ENTRIES && cache_bytes + entry_bytes(&n) <= SB_CACHE_BYTES) {
      n.stamp = ++cache_clock;
      cache_v[free_slot] = n;
      cache_bytes += entry_bytes(&n);
      break;
    }
    cache_drop(&cache_v[oldest]);
  }
  pthread_mutex_unlock(&cache_mu);
}

/* ---- transpiling (child) ------------------------------------------------------------ */

typedef struct {
  const char *src;
  size_t len;
  int language;
  const char *filename;
  int mode; /* 0: a script (runCode), 1: a tool module */
  char *out;
  size_t out_len;
  char err[512];
} tx_job;

static duk_ret_t tx_body(duk_context *ctx, void *udata) {
  tx_job *j = udata;
  duk_push_global_stash(ctx);
  duk_get_prop_string(ctx, -1, "transpile");
  duk_push_lstring(ctx, j->src, j->len);
  duk_push_object(ctx);
  duk_push_string(ctx, j->language == TS_SANDBOX_LANG_TS   ? "ts"
                       : j->language == TS_SANDBOX_LANG_JS ? "js"
                                                           : "auto");
  duk_put_prop_string(ctx, -2, "language");
  duk_push_boolean(ctx, j->mode == 1);
  duk_put_prop_string(ctx, -2, "module");
  duk_push_string(ctx, j->filename);
  duk_put_prop_string(ctx, -2, "filename");
  duk_call(ctx, 2);
  duk_size_t n;
  const char *s = duk_require_lstring(ctx, -1, &n);
  j->out = dup_fixed(s, n, &j->out_len);
  return 0;
}

/* Runs the transpiler on the child's copy of its template, under the run's deadline and
 * memory cap. 0 and j->out set, or -1 with j->err (a SyntaxError with the line and
 * column, a timeout, out of memory) and *stop set when the run must stop. */
static int tx_run(sb_run *user, tx_job *j) {
  sb_run *volatile r = tmpl_tx;
  char why[256];
  if (!r) {
    r = heap_build(build_tx_body, why, sizeof why);
    if (!r) {
      snprintf(j->err, sizeof j->err, "%s", why);
      return -1;
    }
  }
  /* The transpiler's heap has a cap of its own: the run's, but never below
   * SB_TX_MIN_LIMIT, so that a run with a tiny cap can still have its source read (the
   * transpiler's memory grows with the source, which is at most 4 MiB). */
  size_t cap = user->limit - user->base;
  if (cap < SB_TX_MIN_LIMIT) cap = SB_TX_MIN_LIMIT;
  r->base = r->used;
  r->limit = cap > SIZE_MAX - r->used ? SIZE_MAX : r->used + cap;
  r->deadline_ns = user->deadline_ns;
  r->stop = 0;
  r->oom = 0;
  if (setjmp(r->fatal_jb)) {
    snprintf(j->err, sizeof j->err, "transpiler failed: %s", r->fatal_msg);
    return -1;
  }
  int rc = duk_safe_call(r->ctx, tx_body, j, 0, 1);
  if (r->stop == STOP_TIMEOUT) {
    user->stop = STOP_TIMEOUT;
    snprintf(j->err, sizeof j->err, "timeout while transpiling");
    return -1;
  }
  if (rc != DUK_EXEC_SUCCESS || !j->out) {
    if (r->oom || r->stop == STOP_OOM) user->oom = 1;
    snprintf(j->err, sizeof j->err, "%s", rc != DUK_EXEC_SUCCESS ? duk_safe_to_string(r->ctx, -1)
                                                                 : "out of memory (host)");
    return -1;
  }
  return 0;
}

/* Brings r->code down to what Duktape runs, in the child: from the parent's cache when
 * it was there (r->code is then already transpiled, `cached` set), else through the
 * transpiler, sending the output back for the cache. Throws the transpiler's error. */
static void transpile_code(duk_context *ctx, sb_run *r, int mode, int cached) {
  if (cached) return;
  r->phase = PHASE_TRANSPILE;
  tx_job j;
  memset(&j, 0, sizeof j);
  j.src = r->code;
  j.len = r->code_len;
  j.language = r->language;
  j.filename = r->filename;
  j.mode = mode;
  if (tx_run(r, &j)) {
    if (r->oom || r->stop) ts__duk_request_interrupt(ctx);
    const char *m = j.err;
    if (!strncmp(m, "SyntaxError: ", 13)) m += 13;
    (void)duk_error(ctx, DUK_ERR_SYNTAX_ERROR, "%s", m);
    return;
  }
  if (r->link >= 0 && frame_send(r->link, FR_CODE, j.out, j.out_len)) _exit(3);
  r->code = j.out; /* the child's process ends with the run: never freed */
  r->code_len = j.out_len;
}

/* Leaves the run's code compiled on the stack: loaded from the parent's cached bytecode
 * when it had some, else transpiled (or taken as cached text) and compiled, then dumped
 * and sent to the parent for its cache, all before the script runs (mode 0: a script,
 * eval code whose value is the last expression's; 1: a module, a program). */
static void compile_code(duk_context *ctx, sb_run *r, int mode) {
  if (r->bc) {
    r->phase = PHASE_RUN;
    duk_push_external_buffer(ctx);
    duk_config_buffer(ctx, -1, (void *)(uintptr_t)r->bc, r->bc_len);
    duk_load_function(ctx);
    return;
  }
  transpile_code(ctx, r, mode, r->cached);
  r->phase = PHASE_RUN;
  duk_push_lstring(ctx, r->code, r->code_len);
  duk_push_string(ctx, r->filename);
  duk_compile(ctx, mode ? 0 : DUK_COMPILE_EVAL);
  if (r->link < 0 || !r->send_bc) return;
  duk_dup_top(ctx);
  duk_dump_function(ctx);
  duk_size_t n;
  void *p = duk_get_buffer(ctx, -1, &n);
  if (frame_send(r->link, FR_BYTECODE, p, n)) _exit(3);
  duk_pop(ctx);
}

/* ---- a run's body (child) --------------------------------------------------------- */

/* Leaves the completion value settled: the prelude's rt.finish drains the job queue
 * and the timers, and a promise gives its value (or throws its reason). */
static void finish_value(duk_context *ctx) {
  duk_push_global_stash(ctx);
  duk_get_prop_string(ctx, -1, "rt");
  duk_get_prop_string(ctx, -1, "finish");
  duk_dup(ctx, -4);
  duk_call(ctx, 1);
  duk_replace(ctx, -4);
  duk_pop_2(ctx);
}

static duk_ret_t run_body(duk_context *ctx, void *udata) {
  sb_run *r = udata;
  r->phase = PHASE_INPUT;
  duk_push_global_object(ctx);
  if (r->input) {
    duk_push_lstring(ctx, r->input, r->input_len);
    duk_json_decode(ctx, -1);
  } else {
    duk_push_undefined(ctx);
  }
  duk_put_prop_string(ctx, -2, "input");
  duk_pop(ctx);

  compile_code(ctx, r, 0);
  duk_call(ctx, 0);
  finish_value(ctx);

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
             r->limit - r->base);
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


/* What a kind of run does in the child, and how its extra data crosses to the parent. */
typedef struct {
  duk_safe_call_function body;
  void (*pack)(void *extra, ts_buf *b);    /* child: the body's data (status ok only) */
  int (*unpack)(void *extra, cur *c);      /* parent: 0, or -1 when out of memory */
  int mode;                                /* transpile mode: 0 script, 1 module */
} sb_kind;

/* The text of a thrown value (at the top of the stack, replaced by it): its string, as
 * for an Error, or, for a thrown plain object whose string says nothing ("[object
 * Object]": `throw {code: 42}`), its JSON, as console.log shows it. The string comes
 * first, so a toString that never returns still meets the deadline. */
static const char *thrown_text(duk_context *ctx) {
  int plain = duk_is_object(ctx, -1) && !duk_is_function(ctx, -1) && !duk_is_error(ctx, -1);
  if (plain) duk_dup(ctx, -1);
  const char *s = duk_safe_to_string(ctx, -1);
  if (!plain) return s;
  if (strcmp(s, "[object Object]")) {
    duk_replace(ctx, -2);
    return duk_get_string(ctx, -1);
  }
  duk_pop(ctx);
  duk_dup(ctx, -1);
  if (duk_safe_call(ctx, json_encode_top, NULL, 1, 1) == DUK_EXEC_SUCCESS && duk_is_string(ctx, -1)) {
    duk_replace(ctx, -2);
    return duk_get_string(ctx, -1);
  }
  duk_pop(ctx);
  return duk_safe_to_string(ctx, -1);
}

static void child_main(sb_run *r, const sb_kind *k) {
  ts_sandbox_result out;
  memset(&out, 0, sizeof out);
  if (setjmp(r->fatal_jb)) {
    char msg[256];
    snprintf(msg, sizeof msg, "sandbox fatal error: %s", r->fatal_msg);
    classify(r, DUK_EXEC_ERROR, msg, r->timeout_ms, &out);
  } else {
    int rc = duk_safe_call(r->ctx, k->body, r, 0, 1);
    classify(r, rc, rc == DUK_EXEC_SUCCESS ? NULL : thrown_text(r->ctx), r->timeout_ms, &out);
  }
  ts_buf b;
  ts_buf_init(&b, (size_t)-1 / 2);
  if (k->pack && out.status == TS_SANDBOX_OK) {
    k->pack(r->extra, &b);
    if (b.err || frame_send(r->link, FR_EXTRA, b.p, b.len)) _exit(3);
    ts_buf_reset(&b);
  }
  put_u32(&b, (uint32_t)out.status);
  put_u32(&b, (uint32_t)(int32_t)out.code);
  size_t peak = r->peak > r->base ? r->peak - r->base : 0;
  put_u32(&b, (uint32_t)(peak & 0xFFFFFFFFu));
  put_u32(&b, (uint32_t)((uint64_t)peak >> 32));
  put_str(&b, out.value_json, out.value_len);
  put_str(&b, out.error, out.error ? strlen(out.error) : 0);
  if (b.err || frame_send(r->link, FR_RESULT, b.p, b.len)) _exit(3);
  _exit(0);
}

/* ---- host requests (child side: a call to the parent; parent side: the service) ---- */

/* Sends a request and waits for the answer (the parent sends nothing else). The reply's
 * payload is malloc'd into *buf (the caller frees it). */
static int rpc(sb_run *r, ts_buf *req, cur *reply, unsigned char **buf) {
  *buf = NULL;
  if (req->err || frame_send(r->link, FR_HOST, req->p, req->len)) _exit(3);
  unsigned char h[5];
  if (read_all(r->link, h, 5) || h[0] != FR_REPLY) _exit(3);
  size_t n = (size_t)h[1] | (size_t)h[2] << 8 | (size_t)h[3] << 16 | (size_t)h[4] << 24;
  *buf = malloc(n ? n : 1);
  if (!*buf) return -1;
  if (read_all(r->link, *buf, n)) _exit(3);
  reply->p = *buf;
  reply->n = n;
  reply->at = 0;
  reply->bad = 0;
  return 0;
}

/* One request (kind, name, args) and its answer, as rpc(). */
static int rpc_call(sb_run *r, uint32_t kind, const char *name, const char *args, size_t args_len,
                    cur *reply, unsigned char **buf) {
  ts_buf q;
  ts_buf_init(&q, (size_t)-1 / 2);
  put_u32(&q, kind);
  put_str(&q, name, strlen(name));
  put_str(&q, args, args_len);
  int rc = rpc(r, &q, reply, buf);
  ts_buf_fini(&q);
  return rc;
}

static char *rpc_env_value; /* the last state.env answer: borrowed by the caller */

static int rpc_env(void *user, const char *name, const char **value, char *err, size_t err_cap) {
  cur c;
  unsigned char *buf;
  int oom = 0, rc = rpc_call(user, 'e', name, NULL, 0, &c, &buf);
  if (rc) {
    snprintf(err, err_cap, "out of memory (host)");
    return -1;
  }
  rc = (int)(int32_t)get_u32(&c);
  free(rpc_env_value);
  rpc_env_value = get_str_field(&c, NULL, &oom);
  char *e = get_str_field(&c, NULL, &oom);
  if (e) snprintf(err, err_cap, "%s", e);
  free(e);
  free(buf);
  if (c.bad || oom) {
    snprintf(err, err_cap, "state.env: a bad answer from the host");
    return -1;
  }
  *value = rpc_env_value;
  return rc;
}

static void rpc_invoke(void *user, const char *tool, const char *args, size_t args_len,
                       int *is_error, char **text, size_t *text_len) {
  cur c;
  unsigned char *buf;
  int oom = 0;
  *is_error = 1;
  *text = NULL;
  if (rpc_call(user, 'i', tool, args, args_len, &c, &buf) == 0) {
    *is_error = get_u32(&c) != 0;
    *text = get_str_field(&c, text_len, &oom);
    if (c.bad) {
      free(*text);
      *text = NULL;
    }
  }
  free(buf);
}

static int rpc_queue(void *user, const char *tool, const char *args, size_t args_len, char *err,
                     size_t err_cap) {
  cur c;
  unsigned char *buf;
  int oom = 0, rc = -1;
  if (rpc_call(user, 'q', tool, args, args_len, &c, &buf) == 0) {
    rc = (int)(int32_t)get_u32(&c);
    char *e = get_str_field(&c, NULL, &oom);
    if (e) snprintf(err, err_cap, "%s", e);
    free(e);
    if (c.bad) rc = -1;
  } else {
    snprintf(err, err_cap, "out of memory (host)");
  }
  free(buf);
  return rc;
}

/* Parent: serves one request with the caller's callbacks and answers it. */
static int serve(int fd, const ts_sandbox_host *host, cur *c) {
  uint32_t kind = get_u32(c);
  int oom = 0;
  size_t alen = 0;
  char *name = get_str_field(c, NULL, &oom);
  char *args = get_str_field(c, &alen, &oom);
  ts_buf a;
  ts_buf_init(&a, (size_t)-1 / 2);
  if (c->bad || !name) {
    free(name);
    free(args);
    return -1;
  }
  if (kind == 'e') {
    const char *value = NULL;
    char err[256] = "";
    int rc = -1;
    if (oom) snprintf(err, sizeof err, "out of memory (host)");
    else if (host && host->env) rc = host->env(host->user, name, &value, err, sizeof err);
    else snprintf(err, sizeof err, "state.env is not available here");
    put_u32(&a, (uint32_t)(int32_t)rc);
    put_str(&a, rc > 0 ? value : NULL, rc > 0 && value ? strlen(value) : 0);
    put_str(&a, err, strlen(err));
  } else if (kind == 'i') {
    int is_error = 1;
    char *text = NULL;
    size_t tlen = 0;
    if (!oom && host && host->invoke)
      host->invoke(host->user, name, args ? args : "{}", args ? alen : 2, &is_error, &text, &tlen);
    put_u32(&a, is_error ? 1 : 0);
    if (text) put_str(&a, text, tlen);
    else put_str(&a, "out of memory (host)", 20);
    free(text);
  } else if (kind == 'q') {
    char err[512] = "";
    int rc = -1;
    if (oom) snprintf(err, sizeof err, "out of memory (host)");
    else if (host && host->queue)
      rc = host->queue(host->user, name, args ? args : "{}", args ? alen : 2, err, sizeof err);
    else snprintf(err, sizeof err, "state.queueTool is not available here");
    put_u32(&a, (uint32_t)(int32_t)rc);
    put_str(&a, err, strlen(err));
  } else {
    free(name);
    free(args);
    ts_buf_fini(&a);
    return -1;
  }
  free(name);
  free(args);
  int rc = a.err ? -1 : frame_send(fd, FR_REPLY, a.p, a.len);
  ts_buf_fini(&a);
  return rc;
}

/* ---- one run: fork, watch, collect (parent) ---------------------------------------- */

static void finish_console(sb_run *p, ts_sandbox_result *out) {
  if (p->console_full) {
    char note[96];
    snprintf(note, sizeof note, "[console output truncated at %zu bytes]", p->console_limit);
    p->console_full = 0;
    p->console_limit = (size_t)-1 / 2;
    console_add(p, note, strlen(note));
    out->console_truncated = 1;
  }
  ts_buf_putc(&p->console, ']');
  if (!p->console.err) {
    out->console_json = p->console.p;
    out->console_len = p->console.len;
    p->console.p = NULL;
  }
  ts_buf_fini(&p->console);
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    default: return "a signal";
  }
}

/* One run as seen from the parent: started (forked), stepped (one wait on the socket and
 * the frames that came), finished (killed, reaped, settled). ts_sandbox_run steps it to
 * the end at once; state.runCode's handles step several while the tool goes on. */
typedef struct {
  ts_sandbox_opts o; /* a copy; o.cancel may point at `own_cancel` */
  ts_sandbox_cancel own_cancel;
  const sb_kind *k;
  void *extra;
  const ts_sandbox_host *host;
  const char *code;
  size_t len;
  int language;
  sb_run *p; /* the console */
  uint64_t t0, deadline, kill_at;
  uint32_t timeout_ms;
  size_t limit, frame_max;
  const char *filename;
  char *tcode, *new_code; /* cached text; text the child transpiled */
  size_t tlen, new_len;
  unsigned char *tbc; /* cached bytecode */
  size_t tbc_len;
  int early; /* no frame but FR_CODE/FR_BYTECODE has come yet */
  int fd, nested, started, ended;
  pid_t pid;
  ts_buf in;
  int stopped, got, bad, oom;
  const char *term;
  ts_sandbox_result out;
} sb_job;

/* Starts a run; 0, or -1 when it is already over (out holds why: terminated before it
 * began, setup failed). The job must then still be finished. */
static int job_start(sb_job *j, const char *code, size_t len, const ts_sandbox_opts *o,
                     const sb_kind *k, void *extra, const ts_sandbox_host *host,
                     const char *filename) {
  static const ts_sandbox_opts defaults;
  ts_sandbox_result *out = &j->out;
  memset(j, 0, sizeof *j);
  j->t0 = now_ns();
  j->fd = -1;
  j->pid = -1;
  j->o = o ? *o : defaults;
  o = &j->o;
  j->k = k;
  j->extra = extra;
  j->host = host;
  j->code = code;
  j->len = len;
  j->nested = sb_in_child;
  j->filename = filename;
  j->early = 1;
  if (!code && len) {
    set_error(out, TS_SANDBOX_ERROR, TS_E_INVAL, "invalid argument: no code");
    return -1;
  }
  j->timeout_ms = o->timeout_ms ? o->timeout_ms : TS_SANDBOX_DEFAULT_TIMEOUT_MS;
  j->limit = o->memory_limit_bytes ? o->memory_limit_bytes : TS_SANDBOX_DEFAULT_MEMORY_LIMIT;
  sb_run *p = j->p = calloc(1, sizeof *p);
  if (!p) {
    set_error(out, TS_SANDBOX_ERROR, TS_E_NOMEM, "out of memory (host)");
    return -1;
  }
  run_reset(p);
  p->console_limit = o->console_limit_bytes ? o->console_limit_bytes
                                            : TS_SANDBOX_DEFAULT_CONSOLE_LIMIT;
  /* Entries are cut to the limit before escaping, and escaping may make one up to six
   * times longer; the buffer's own limit leaves room for that and for the note. */
  ts_buf_init(&p->console, p->console_limit < SIZE_MAX / 16 ? p->console_limit * 7 + 512
                                                             : SIZE_MAX / 2);
  ts_buf_putc(&p->console, '[');
  char msg[512];
  j->deadline = j->t0 + (uint64_t)j->timeout_ms * 1000000u;
  j->language = o->language;
  int sv[2] = {-1, -1};

  const char *why = cancel_reason(o->cancel, o->cancel_flag);
  if (why) {
    snprintf(msg, sizeof msg, "terminated: %s", why);
    set_error(out, TS_SANDBOX_TERMINATED, TS_E_SANDBOX_TERMINATED, msg);
    return -1;
  }
  if (!j->nested) {
    pthread_once(&tmpl_once, tmpl_init);
    if (!tmpl_run || !tmpl_tx) {
      set_error(out, TS_SANDBOX_ERROR, TS_E_SANDBOX_ERROR, tmpl_why[0] ? tmpl_why : "sandbox setup failed");
      return -1;
    }
    cache_key key = {j->language, k->mode, filename, code, len};
    if (code) cache_get(&key, &j->tcode, &j->tlen, &j->tbc, &j->tbc_len);
    /* The run's clock starts now: the process's first run built the templates above,
     * which is not the script's time. */
    j->t0 = now_ns();
    j->deadline = j->t0 + (uint64_t)j->timeout_ms * 1000000u;
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
    snprintf(msg, sizeof msg, "sandbox setup failed: socketpair: %s", strerror(errno));
    set_error(out, TS_SANDBOX_ERROR, TS_E_SANDBOX_ERROR, msg);
    return -1;
  }
  pid_t parent = getpid();
  j->pid = fork();
  if (j->pid < 0) {
    close(sv[0]);
    close(sv[1]);
    snprintf(msg, sizeof msg, "sandbox setup failed: fork: %s", strerror(errno));
    set_error(out, TS_SANDBOX_ERROR, TS_E_SANDBOX_ERROR, msg);
    return -1;
  }
  if (j->pid == 0) { /* ---- the child ---- */
    close(sv[0]);
    sb_in_child = 1;
    if (!j->nested) setpgid(0, 0); /* one group: a kill takes nested runs along */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(4);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    char bwhy[256] = "";
    sb_run *r = j->nested ? heap_build(build_body, bwhy, sizeof bwhy) : tmpl_run;
    if (!r) {
      ts_buf b;
      ts_buf_init(&b, 1 << 20);
      put_u32(&b, TS_SANDBOX_ERROR);
      put_u32(&b, (uint32_t)(int32_t)TS_E_SANDBOX_ERROR);
      put_u32(&b, 0);
      put_u32(&b, 0);
      put_str(&b, NULL, 0);
      put_str(&b, bwhy, strlen(bwhy));
      frame_send(sv[1], FR_RESULT, b.p, b.len);
      _exit(0);
    }
    /* The cap is on what the run allocates: the template's own bytes (the prelude, shared
     * copy-on-write with every other run) come on top. */
    r->base = r->used;
    r->limit = j->limit > SIZE_MAX - r->base ? SIZE_MAX : r->base + j->limit;
    r->deadline_ns = j->deadline;
    r->timeout_ms = j->timeout_ms;
    r->cancel = NULL; /* the parent watches those, and kills */
    r->cancel_flag = NULL;
    r->stop = STOP_NONE;
    r->oom = 0;
    r->refused_in_a_row = 0;
    r->refused_total = 0;
    r->peak = r->used;
    r->phase = PHASE_SETUP;
    r->code = j->tcode ? j->tcode : code ? code : "";
    r->code_len = j->tcode ? j->tlen : len;
    r->cached = j->tcode != NULL;
    r->bc = j->tbc;
    r->bc_len = j->tbc_len;
    r->send_bc = !j->nested && code;
    if (!j->nested) { /* the templates' copies: from here on, blocks from the arena */
      r->arena = 1;
      if (tmpl_tx) tmpl_tx->arena = 1;
    }
    r->language = j->language;
    r->filename = filename;
    r->input = o->input_json;
    r->input_len = o->input_len;
    r->link = sv[1];
    r->console_limit = p->console_limit;
    r->console_sent = 0;
    r->host = host;
    r->extra = extra;
    seed_rng(r);
    child_main(r, k);
  }
  /* ---- the parent ---- */
  close(sv[1]);
  j->fd = sv[0];
  j->started = 1;
  if (!j->nested) setpgid(j->pid, j->pid); /* also here: whichever runs first */
  j->frame_max = j->limit > SIZE_MAX / 2 ? SIZE_MAX / 2 : j->limit + SB_FRAME_SLACK;
  ts_buf_init(&j->in, j->frame_max + 5 + 65536);
  j->kill_at = j->deadline + (uint64_t)SB_KILL_GRACE_MS * 1000000u;
  return 0;
}

/* Waits up to wait_ms (at most one tick) for the child and takes the frames that came.
 * Returns 1 once the run is over (a result, a stop, a dead child), else 0. */
static int job_step(sb_job *j, int wait_ms) {
  if (!j->started || j->ended) return 1;
  ts_sandbox_result *out = &j->out;
  char chunk[16384];
  j->term = cancel_reason(j->o.cancel, j->o.cancel_flag);
  if (j->term) {
    j->stopped = STOP_TERMINATED;
    return j->ended = 1;
  }
  uint64_t t = now_ns();
  if (t >= j->kill_at) {
    j->stopped = STOP_TIMEOUT;
    return j->ended = 1;
  }
  uint64_t left_ms = (j->kill_at - t) / 1000000u + 1;
  int wait = wait_ms < 0 ? 0 : wait_ms > SB_TICK_MS ? SB_TICK_MS : wait_ms;
  if ((uint64_t)wait > left_ms) wait = (int)left_ms;
  struct pollfd pf = {j->fd, POLLIN, 0};
  int pr = poll(&pf, 1, wait);
  if (pr <= 0) return 0; /* a tick, or EINTR */
  ssize_t g = recv(j->fd, chunk, sizeof chunk, MSG_DONTWAIT);
  if (g < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  if (g <= 0) return j->ended = 1; /* the child is gone without a result */
  if (ts_buf_append(&j->in, chunk, (size_t)g)) {
    j->bad = 1;
    return j->ended = 1;
  }
  size_t at = 0;
  while (!j->got && !j->bad && j->in.len - at >= 5) {
    const unsigned char *h = (const unsigned char *)j->in.p + at;
    size_t n = (size_t)h[1] | (size_t)h[2] << 8 | (size_t)h[3] << 16 | (size_t)h[4] << 24;
    if (n > j->frame_max) {
      j->bad = 1;
      break;
    }
    if (j->in.len - at - 5 < n) break;
    cur c = {h + 5, n, 0, 0};
    if (h[0] != FR_CODE && h[0] != FR_BYTECODE) j->early = 0;
    switch (h[0]) {
      case FR_CONSOLE:
        console_add(j->p, (const char *)c.p, n);
        if (j->o.on_console) j->o.on_console(j->o.console_user, (const char *)c.p, n);
        break;
      case FR_HOST: {
        uint64_t paused = now_ns();
        if (serve(j->fd, j->host, &c)) j->bad = 1;
        j->kill_at += now_ns() - paused; /* host time is not the run's */
        break;
      }
      case FR_CODE: /* the transpiler's output, then (FR_BYTECODE) its compiled form */
        if (!j->early || j->new_code) {
          j->bad = 1;
          break;
        }
        j->new_code = malloc(n + 1);
        if (j->new_code) {
          memcpy(j->new_code, c.p, n);
          j->new_code[n] = '\0';
          j->new_len = n;
        }
        break;
      case FR_BYTECODE: {
        /* Only before the script ran (module comment above cache_put) and only once. */
        if (!j->early) {
          j->bad = 1;
          break;
        }
        j->early = 0;
        const char *text = j->new_code ? j->new_code : j->tcode;
        size_t tl = j->new_code ? j->new_len : j->tlen;
        if (!j->nested && j->code && text) {
          cache_key key = {j->language, j->k->mode, j->filename, j->code, j->len};
          cache_put(&key, text, tl, c.p, n);
        }
        break;
      }
      case FR_EXTRA:
        if (!j->k->unpack || j->k->unpack(j->extra, &c)) j->oom = 1;
        break;
      case FR_RESULT: {
        out->status = (ts_sandbox_status)get_u32(&c);
        out->code = (int)(int32_t)get_u32(&c);
        uint64_t lo = get_u32(&c), hi = get_u32(&c);
        out->memory_peak = (size_t)(lo | hi << 32);
        out->value_json = get_str_field(&c, &out->value_len, &j->oom);
        out->error = get_str_field(&c, NULL, &j->oom);
        if (c.bad || out->status > TS_SANDBOX_OOM) j->bad = 1;
        j->got = 1;
        break;
      }
      default: j->bad = 1;
    }
    at += 5 + n;
  }
  if (at) {
    memmove(j->in.p, j->in.p + at, j->in.len - at);
    j->in.len -= at;
  }
  if (j->got || j->bad) j->ended = 1;
  return j->ended;
}

/* Kills what is left of the run, reaps it, settles the result into `out` (moved out of
 * the job) and frees the job's own memory. */
static int job_finish(sb_job *j, ts_sandbox_result *res) {
  ts_sandbox_result *out = &j->out;
  char msg[512];
  if (j->started) {
    ts_buf_fini(&j->in);
    /* Whatever happened, nothing of the run outlives it. */
    if (kill(j->nested ? j->pid : -j->pid, SIGKILL) && !j->nested) kill(j->pid, SIGKILL);
    int wst = 0;
    while (waitpid(j->pid, &wst, 0) < 0 && errno == EINTR) {
    }
    if (j->stopped == STOP_TERMINATED) {
      free(out->value_json);
      free(out->error);
      out->value_json = out->error = NULL;
      snprintf(msg, sizeof msg, "terminated: %s", j->term);
      set_error(out, TS_SANDBOX_TERMINATED, TS_E_SANDBOX_TERMINATED, msg);
    } else if (j->stopped == STOP_TIMEOUT) {
      snprintf(msg, sizeof msg, "timeout: the script ran longer than %lu ms",
               (unsigned long)j->timeout_ms);
      set_error(out, TS_SANDBOX_TIMEOUT, TS_E_SANDBOX_TIMEOUT, msg);
    } else if (j->bad) {
      set_error(out, TS_SANDBOX_ERROR, TS_E_SANDBOX_ERROR, "the sandbox process sent a malformed answer");
    } else if (!j->got) {
      if (WIFSIGNALED(wst))
        snprintf(msg, sizeof msg, "the sandbox process died (%s)", signal_name(WTERMSIG(wst)));
      else
        snprintf(msg, sizeof msg, "the sandbox process ended without a result (status %d)",
                 WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
      set_error(out, TS_SANDBOX_ERROR, TS_E_SANDBOX_ERROR, msg);
    } else if (j->oom || (out->status == TS_SANDBOX_OK && !out->value_json) ||
               (out->status != TS_SANDBOX_OK && !out->error)) {
      set_error(out, TS_SANDBOX_ERROR, TS_E_NOMEM, "out of memory (host)");
    }
    if (out->status != TS_SANDBOX_OK) {
      free(out->value_json);
      out->value_json = NULL;
      out->value_len = 0;
    }
    close(j->fd);
  }
  free(j->tcode);
  free(j->new_code);
  free(j->tbc);
  if (j->p) {
    finish_console(j->p, out);
    free(j->p);
  }
  if (out->status == TS_SANDBOX_OK && !out->console_json)
    set_error(out, TS_SANDBOX_ERROR, TS_E_NOMEM, "out of memory (host)");
  out->elapsed_ms = (double)(now_ns() - j->t0) / 1e6;
  *res = *out;
  memset(out, 0, sizeof *out);
  return res->code;
}

static int sb_exec(const char *code, size_t len, const ts_sandbox_opts *o, const sb_kind *k,
                   void *extra, const ts_sandbox_host *host, const char *filename,
                   ts_sandbox_result *out) {
  sb_job *j = malloc(sizeof *j); /* 16 KiB of frames buffer lives on the stack of step */
  if (!j) {
    memset(out, 0, sizeof *out);
    set_error(out, TS_SANDBOX_ERROR, TS_E_NOMEM, "out of memory (host)");
    return out->code;
  }
  if (job_start(j, code, len, o, k, extra, host, filename) == 0)
    while (!job_step(j, SB_TICK_MS)) {
    }
  int rc = job_finish(j, out);
  free(j);
  return rc;
}

static const sb_kind run_kind = {run_body, NULL, NULL, 0};

int ts_sandbox_run(const char *code, size_t len, const ts_sandbox_opts *o, ts_sandbox_result *out) {
  return sb_exec(code, len, o, &run_kind, NULL, NULL, "code", out);
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
 * The tool kit (runtime/js/toolkit.js) is one function expression parked in the
 * template's stash; called in a module's heap, it installs `z`, `defineTool`, `module`
 * and `exports` as globals and returns the host's helpers (describe: the definitions as
 * plain data; run: find a tool, execute it, settle its value, a promise included), which
 * stay on the C value stack and out of the module's reach. */

/* Installs the tool kit, then evaluates the module; leaves the helpers at index 0. */
static void eval_module(duk_context *ctx, sb_run *r) {
  duk_push_global_stash(ctx);
  duk_get_prop_string(ctx, -1, "toolkit");
  duk_push_global_object(ctx);
  duk_get_prop_string(ctx, -3, "rt");
  duk_call(ctx, 2); /* [stash helpers] */
  duk_remove(ctx, -2);
  compile_code(ctx, r, 1);
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
  eval_module(ctx, r);
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
    t->has_started_hook = get_bool(ctx, e, "hook");
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
      v->scoped = get_bool(ctx, -1, "scoped");
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
  d->defs_json = get_str(ctx, -1, "defs", &lx->oom); /* definePrompt/defineAgent, as JSON */
  r->value = dup_fixed("null", 4, NULL);
  return 0;
}


/* The definitions, from the child to the parent. */
static void pack_defs(void *extra, ts_buf *b) {
  load_ctx *lx = extra;
  const ts_sandbox_tool_defs *d = lx->defs;
  put_u32(b, (uint32_t)d->n);
  for (size_t i = 0; i < d->n; i++) {
    const ts_sandbox_tool_def *t = &d->v[i];
#define PS(s) put_str(b, (s), (s) ? strlen(s) : 0)
    PS(t->name);
    PS(t->description);
    PS(t->args_schema);
    PS(t->progress_arg);
    PS(t->annotations);
    put_u32(b, (uint32_t)t->packed);
    put_u32(b, (uint32_t)t->has_started_hook);
    put_u32(b, (uint32_t)t->n_vars);
    for (size_t k = 0; k < t->n_vars; k++) {
      PS(t->vars[k].name);
      PS(t->vars[k].description);
      put_u32(b, (uint32_t)t->vars[k].required);
      put_u32(b, (uint32_t)t->vars[k].secret);
      put_u32(b, (uint32_t)t->vars[k].scoped);
    }
    put_u32(b, (uint32_t)t->has_uses);
    put_u32(b, (uint32_t)t->n_uses);
    for (size_t k = 0; k < t->n_uses; k++) PS(t->uses[k]);
  }
  PS(d->defs_json);
#undef PS
}

/* A count read from a frame, bounded by what the payload can still hold (each element
 * takes at least 4 bytes), so that a bad frame cannot make us allocate wildly. */
static size_t get_count(cur *c) {
  uint32_t n = get_u32(c);
  if ((size_t)n > (c->n - c->at) / 4) {
    c->bad = 1;
    return 0;
  }
  return n;
}

static int unpack_defs(void *extra, cur *c) {
  load_ctx *lx = extra;
  ts_sandbox_tool_defs *d = lx->defs;
  int oom = 0;
  size_t n = get_count(c);
  d->v = n ? calloc(n, sizeof *d->v) : NULL;
  if (n && !d->v) return -1;
  for (size_t i = 0; i < n && !c->bad && !oom; i++) {
    ts_sandbox_tool_def *t = &d->v[d->n++];
    t->name = get_str_field(c, NULL, &oom);
    t->description = get_str_field(c, NULL, &oom);
    t->args_schema = get_str_field(c, NULL, &oom);
    t->progress_arg = get_str_field(c, NULL, &oom);
    t->annotations = get_str_field(c, NULL, &oom);
    t->packed = get_u32(c) != 0;
    t->has_started_hook = get_u32(c) != 0;
    size_t nv = get_count(c);
    t->vars = nv ? calloc(nv, sizeof *t->vars) : NULL;
    if (nv && !t->vars) oom = 1, nv = 0;
    for (size_t k = 0; k < nv && !c->bad; k++) {
      ts_sandbox_tool_var *v = &t->vars[t->n_vars++];
      v->name = get_str_field(c, NULL, &oom);
      v->description = get_str_field(c, NULL, &oom);
      v->required = get_u32(c) != 0;
      v->secret = get_u32(c) != 0;
      v->scoped = get_u32(c) != 0;
      if (!v->name || !v->description) c->bad = 1;
    }
    t->has_uses = get_u32(c) != 0;
    size_t nu = get_count(c);
    if (t->has_uses) {
      t->uses = calloc(nu ? nu : 1, sizeof *t->uses);
      if (!t->uses) oom = 1, nu = 0;
      for (size_t k = 0; k < nu && !c->bad; k++) {
        t->uses[t->n_uses] = get_str_field(c, NULL, &oom);
        if (!t->uses[t->n_uses++]) c->bad = 1;
      }
    }
    if (!t->name || !t->description) c->bad = 1;
  }
  if (!c->bad && !oom) d->defs_json = get_str_field(c, NULL, &oom);
  if (c->bad) lx->oom = 1; /* reported as a host failure */
  return oom ? -1 : 0;
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
  free(d->defs_json);
  free(d->v);
  memset(d, 0, sizeof *d);
}


static const sb_kind load_kind = {load_body, pack_defs, unpack_defs, 1};

int ts_sandbox_load_tools(const char *src, size_t len, const char *module_name,
                          const ts_sandbox_opts *o, ts_sandbox_tool_defs *out, char *why,
                          size_t why_cap) {
  memset(out, 0, sizeof *out);
  ts_sandbox_tool_defs child_defs; /* what the child fills in its own copy */
  memset(&child_defs, 0, sizeof child_defs);
  load_ctx lx = {module_name ? module_name : "tool", out, 0};
  ts_sandbox_result res;
  sb_exec(src, len, o, &load_kind, &lx, NULL, lx.module_name, &res);
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

/* ---- state.runCode: nested runs a tool can await and terminate -----------------------
 *
 * A tool's state.runCode starts a run of its own (a grandchild process, forked from the
 * tool's child) and gets a handle at once; the tool goes on, and the handle is settled
 * by polling: toolkit.js polls from the job queue's drain (await), or waits when the
 * tool reads the result synchronously. Console entries of the run are handed over as
 * they come. At most SB_MAX_RUNS runs of one tool are alive at once. */

#define SB_MAX_RUNS 16

typedef struct {
  sb_job job;
  char *code, *input;
  ts_buf pending; /* console entries not yet handed to the script: u32 length + bytes */
  int finished;
  ts_sandbox_result res;
} nested_run;

static nested_run *nested_runs[SB_MAX_RUNS];

static void nested_console(void *user, const char *s, size_t n) {
  nested_run *nr = user;
  put_str(&nr->pending, s, n);
}

static duk_ret_t rc_start(duk_context *ctx) {
  sb_run *r = run_of(ctx);
  duk_size_t clen;
  const char *code = duk_require_lstring(ctx, 0, &clen);
  int slot = -1;
  for (int i = 0; i < SB_MAX_RUNS; i++)
    if (!nested_runs[i]) {
      slot = i;
      break;
    }
  if (slot < 0)
    return duk_error(ctx, DUK_ERR_RANGE_ERROR, "runCode: at most %d runs at once", SB_MAX_RUNS);
  ts_sandbox_opts o;
  memset(&o, 0, sizeof o);
  size_t cap = r->limit - r->base;
  const char *input = NULL;
  duk_size_t ilen = 0;
  if (duk_is_object(ctx, 1)) {
    if (duk_get_prop_string(ctx, 1, "timeoutMs") && duk_is_number(ctx, -1)) {
      double v = duk_get_number(ctx, -1);
      if (v >= 1 && v < (double)r->timeout_ms) o.timeout_ms = (uint32_t)v;
    }
    duk_pop(ctx);
    if (duk_get_prop_string(ctx, 1, "memoryLimitBytes") && duk_is_number(ctx, -1)) {
      double v = duk_get_number(ctx, -1);
      if (v >= 1 && v < (double)cap) o.memory_limit_bytes = (size_t)v;
    }
    duk_pop(ctx);
    if (duk_get_prop_string(ctx, 1, "language") && duk_is_string(ctx, -1)) {
      const char *l = duk_get_string(ctx, -1);
      if (!strcmp(l, "ts") || !strcmp(l, "typescript")) o.language = TS_SANDBOX_LANG_TS;
      else if (!strcmp(l, "js") || !strcmp(l, "javascript")) o.language = TS_SANDBOX_LANG_JS;
      else if (strcmp(l, "auto"))
        return duk_error(ctx, DUK_ERR_TYPE_ERROR, "runCode: language must be 'js', 'ts' or 'auto'");
    }
    duk_pop(ctx);
    duk_get_prop_string(ctx, 1, "input");
    if (!duk_is_undefined(ctx, -1)) {
      duk_json_encode(ctx, -1);
      input = duk_get_lstring(ctx, -1, &ilen);
    }
  }
  if (!o.timeout_ms) o.timeout_ms = r->timeout_ms; /* never longer than the tool's own */
  if (!o.memory_limit_bytes) o.memory_limit_bytes = cap;
  nested_run *nr = calloc(1, sizeof *nr);
  if (!nr) return duk_error(ctx, DUK_ERR_ERROR, "out of memory (host)");
  nr->code = malloc(clen + 1);
  nr->input = input ? malloc(ilen + 1) : NULL;
  if (!nr->code || (input && !nr->input)) {
    free(nr->code);
    free(nr->input);
    free(nr);
    return duk_error(ctx, DUK_ERR_ERROR, "out of memory (host)");
  }
  memcpy(nr->code, code, clen);
  nr->code[clen] = '\0';
  if (input) {
    memcpy(nr->input, input, ilen);
    nr->input[ilen] = '\0';
    o.input_json = nr->input;
    o.input_len = ilen;
  }
  ts_buf_init(&nr->pending, (size_t)4 << 20);
  o.on_console = nested_console;
  o.console_user = nr;
  nested_runs[slot] = nr;
  ts_sandbox_cancel_init(&nr->job.own_cancel);
  if (job_start(&nr->job, nr->code, clen, &o, &run_kind, NULL, NULL, "code") != 0) {
    job_finish(&nr->job, &nr->res);
    nr->finished = 1;
  } else {
    /* the handle's terminate: the job's own copy of the options points at it */
    nr->job.o.cancel = &nr->job.own_cancel;
  }
  duk_push_int(ctx, slot);
  return 1;
}

static nested_run *run_arg(duk_context *ctx) {
  duk_int_t id = duk_require_int(ctx, 0);
  if (id < 0 || id >= SB_MAX_RUNS || !nested_runs[id]) {
    (void)duk_error(ctx, DUK_ERR_RANGE_ERROR, "runCode: no such run");
    return NULL;
  }
  return nested_runs[id];
}

/* poll(id, waitMs): {console: [new entries], done, result} after waiting up to waitMs
 * (0: just look). Time spent waiting is not the tool's (its clock pauses, as for any host
 * call); the run has its own deadline. */
static duk_ret_t rc_poll(duk_context *ctx) {
  sb_run *r = run_of(ctx);
  nested_run *nr = run_arg(ctx);
  double wait = duk_get_number_default(ctx, 1, 0);
  uint64_t t0 = now_ns(), until = t0 + (uint64_t)(wait > 0 ? (wait > 6e4 ? 6e4 : wait) : 0) * 1000000u;
  while (!nr->finished) {
    if (job_step(&nr->job, (int)((until > now_ns() ? until - now_ns() : 0) / 1000000u))) {
      job_finish(&nr->job, &nr->res);
      nr->finished = 1;
      break;
    }
    if (now_ns() >= until) break;
    if (ts__sandbox_timeout_check(r)) break; /* the tool itself must stop */
  }
  resume_clock(r, t0);
  duk_push_object(ctx);
  duk_push_array(ctx);
  cur c = {(const unsigned char *)nr->pending.p, nr->pending.len, 0, 0};
  duk_uarridx_t k = 0;
  while (c.at < c.n && !c.bad) {
    uint32_t n = get_u32(&c);
    if (c.bad || c.n - c.at < n) break;
    duk_push_lstring(ctx, (const char *)c.p + c.at, n);
    duk_put_prop_index(ctx, -2, k++);
    c.at += n;
  }
  ts_buf_reset(&nr->pending);
  duk_put_prop_string(ctx, -2, "console");
  duk_push_boolean(ctx, nr->finished);
  duk_put_prop_string(ctx, -2, "done");
  if (nr->finished) {
    size_t n = 0;
    char *json = ts_sandbox_result_json(&nr->res, &n);
    if (!json) return duk_error(ctx, DUK_ERR_ERROR, "out of memory (host)");
    duk_push_lstring(ctx, json, n);
    free(json);
    duk_json_decode(ctx, -1);
    duk_put_prop_string(ctx, -2, "result");
    ts_sandbox_result_fini(&nr->res);
    ts_buf_fini(&nr->pending);
    free(nr->code);
    free(nr->input);
    nested_runs[duk_get_int(ctx, 0)] = NULL;
    free(nr);
  }
  return 1;
}

/* stop(id, reason): the handle's terminate; the run ends as terminated at its next poll. */
static duk_ret_t rc_stop(duk_context *ctx) {
  nested_run *nr = run_arg(ctx);
  /* the reason must outlive the run: kept in a small table of copies */
  static char reasons[SB_MAX_RUNS][128];
  int id = duk_get_int(ctx, 0);
  snprintf(reasons[id], sizeof reasons[id], "%s",
           duk_is_string(ctx, 1) ? duk_get_string(ctx, 1) : "terminated by the caller");
  ts_sandbox_terminate(&nr->job.own_cancel, reasons[id]);
  return 0;
}

static duk_ret_t call_body(duk_context *ctx, void *udata) {
  sb_run *r = udata;
  call_ctx *cx = r->extra;
  /* In the child the host is the parent: each callback becomes a request to it. */
  static ts_sandbox_host rpc_host;
  if (r->link >= 0 && cx->host) {
    rpc_host.user = r;
    rpc_host.env = cx->host->env ? rpc_env : NULL;
    rpc_host.invoke = cx->host->invoke ? rpc_invoke : NULL;
    rpc_host.queue = cx->host->queue ? rpc_queue : NULL;
    cx->host = &rpc_host;
  }
  eval_module(ctx, r);
  duk_get_prop_string(ctx, 0, "run");
  duk_push_string(ctx, cx->module_name);
  duk_push_string(ctx, cx->tool);
  duk_push_object(ctx);
  static const struct {
    const char *name;
    duk_c_function fn;
    duk_idx_t nargs;
  } fns[] = {{"env", state_env, 1}, {"invokeTool", state_invoke, 2}, {"queueTool", state_queue, 2}};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
    duk_push_c_function(ctx, fns[i].fn, fns[i].nargs);
    duk_put_prop_string(ctx, -2, fns[i].name);
  }
  duk_push_string(ctx, cx->tool);
  duk_put_prop_string(ctx, -2, "tool");
  duk_push_lstring(ctx, cx->args, cx->args_len);
  /* what toolkit.js builds state.runCode from; never reachable by the module itself */
  duk_push_object(ctx);
  duk_push_c_function(ctx, rc_start, 2);
  duk_put_prop_string(ctx, -2, "start");
  duk_push_c_function(ctx, rc_poll, 2);
  duk_put_prop_string(ctx, -2, "poll");
  duk_push_c_function(ctx, rc_stop, 2);
  duk_put_prop_string(ctx, -2, "stop");
  duk_call(ctx, 5); /* [helpers [is_error, text]] */
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

static void pack_answer(void *extra, ts_buf *b) {
  call_ctx *cx = extra;
  put_u32(b, (uint32_t)cx->is_error);
  put_str(b, cx->text, cx->text_len);
}

static int unpack_answer(void *extra, cur *c) {
  call_ctx *cx = extra;
  int oom = 0;
  cx->is_error = get_u32(c) != 0;
  free(cx->text);
  cx->text = get_str_field(c, &cx->text_len, &oom);
  if (c->bad && !oom) {
    free(cx->text);
    cx->text = NULL;
  }
  return oom ? -1 : 0;
}

static const sb_kind call_kind = {call_body, pack_answer, unpack_answer, 1};

/* ---- the tool_call_started hook ------------------------------------------------------- */

typedef struct {
  const char *module_name, *tool, *event;
  size_t event_len;
} hook_ctx;

static duk_ret_t hook_body(duk_context *ctx, void *udata) {
  sb_run *r = udata;
  hook_ctx *hx = r->extra;
  eval_module(ctx, r);
  duk_get_prop_string(ctx, 0, "hook");
  duk_push_string(ctx, hx->module_name);
  duk_push_string(ctx, hx->tool);
  duk_push_lstring(ctx, hx->event, hx->event_len);
  duk_call(ctx, 3);
  r->phase = PHASE_VALUE;
  r->value = dup_fixed("null", 4, NULL);
  return 0;
}

static const sb_kind hook_kind = {hook_body, NULL, NULL, 1};

int ts_sandbox_call_hook(const char *src, size_t len, const char *module_name, const char *tool,
                         const char *event_json, size_t event_len, const ts_sandbox_opts *o,
                         char *why, size_t why_cap) {
  hook_ctx hx = {module_name ? module_name : "tool", tool ? tool : "",
                 event_json ? event_json : "{}", event_json ? event_len : 2};
  ts_sandbox_opts oo;
  if (o) oo = *o;
  else memset(&oo, 0, sizeof oo);
  oo.input_json = NULL;
  oo.input_len = 0;
  ts_sandbox_result res;
  int rc = sb_exec(src, len, &oo, &hook_kind, &hx, NULL, hx.module_name, &res);
  if (rc) snprintf(why, why_cap, "%s", res.error ? res.error : "out of memory (host)");
  ts_sandbox_result_fini(&res);
  return rc;
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
  sb_exec(src, len, &oo, &call_kind, &cx, host, cx.module_name, &res);
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
    else if (res.status == TS_SANDBOX_TERMINATED && res.error)
      /* the run was stopped from outside (Ctrl-C in `run`: the dispatcher's cancel flag) */
      snprintf(msg, sizeof msg, "cancelled: %s",
               !strncmp(res.error, "terminated: ", 12) ? res.error + 12 : res.error);
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
