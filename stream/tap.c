/*
 * tap.c: see tap.h for the rules. This file is the glue and the per-call bookkeeping.
 *
 * Data flow. ts_tap_feed hands bytes to the SSE framer; each complete SSE event goes to
 * the provider adapter; the adapter's normalized events (call begins, argument
 * fragment, call ends, turn ends, error) drive one `call` record per tool call. Every
 * argument fragment is fed once to the call's own JSON tokenizer, whose tokens do three
 * things in the same pass: rebuild the compact arguments text (for READY), feed the
 * progress-argument watcher (for STARTED and its label), and detect the end of the
 * arguments object. Nothing is re-parsed; the only copies are the compact arguments
 * and the short label.
 *
 * Per event, the cheap way: a big call is thousands of small events, so the fragments
 * come from the adapter straight to call_args (ts_adapter_set_args_fn, no event record),
 * a string's middle pieces go to the compact text without the compact writer (a few bytes
 * copied inline, on_arg_token), a piece with nothing to do after the tokenizer returns at
 * once, and the framer's keep question is dropped once the format is known to keep every
 * event whole.
 *
 * For `raw` input there is no SSE and no adapter: the bytes are one call's arguments
 * and go straight to call 0, cut at heartbeat boundaries so that heartbeats and their
 * offsets do not depend on how the input was chunked.
 */
#include "stream/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stream/eventstream.h"
#include "stream/json_seq.h"
#include "stream/json_tok.h"
#include "stream/json_unescape.h"
#include "stream/json_watch.h"
#include "stream/sse.h"
#include "base/strbuf.h"

typedef struct call {
  uint32_t index;
  uint8_t started, ready, failed, ended;
  uint8_t label_string;   /* the progress value is a string: decode it */
  uint8_t label_cut;      /* a visible character did not fit under progress_max */
  uint8_t label_full;     /* ... so nothing more goes into the label */
  uint8_t label_gap;      /* control characters seen since the last visible one */
  uint8_t cp_len, cp_need; /* the UTF-8 character being assembled for the label */
  char cp[4];
  uint8_t watching;       /* a progress argument is set for this tool */
  uint8_t plain;          /* on_arg_token's common piece goes straight to args: not raw
                           * input, and not a watched call before its STARTED */
  uint8_t in_progress_value;
  uint8_t tok_first_seen; /* the tokenizer reported its first token */
  uint8_t complete_pending; /* the arguments object closed during this fragment */
  uint8_t raw_began;      /* raw input: the first non-whitespace byte was a '{' */
  uint8_t sep;            /* compact writer of args: a ',' is due before the next value */
  uint8_t label_sep;      /* the same for a non-string label */
  uint64_t done_off;      /* raw input: the byte after the arguments' closing brace */
  uint64_t arg_bytes;     /* argument text bytes received */
  uint64_t next_heartbeat;
  char id[TS_ADAPTER_MAX_ID];  /* call_id: the provider's, or synthesized */
  size_t id_len;
  char pid[TS_ADAPTER_MAX_ID]; /* the provider's own id (may be empty) */
  size_t pid_len;
  uint8_t synthesized;         /* id is not pid */
  char name[TS_ADAPTER_MAX_ID];
  size_t name_len;
  ts_json_tok tok;
  ts_json_watch watch;
  ts_json_unescape label_dec;
  ts_buf args;    /* compact arguments */
  ts_buf label;   /* progress label being built */
  ts_buf pending; /* argument text held back until STARTED (deltas only) */
  int32_t err;    /* first error of this call */
  uint64_t err_at; /* argument byte offset of that error */
  struct ts_tap *tap;
} call;

/* How the reply is framed, decided by its first byte that is not whitespace. */
enum { FRAME_UNDECIDED = 0, FRAME_SSE, FRAME_JSON, FRAME_JSON_ARRAY, FRAME_EVS, FRAME_IGNORE };

/* The first bytes of the reply, kept to say what it was when no format recognises it. */
#define TAP_HEAD 64
/* The media type kept for messages (longer ones are cut: they are only quoted). */
#define TAP_MEDIA 64

/* What the reply's Content-Type says (ts_tap_content_type). */
enum { CT_NONE = 0, CT_OTHER, CT_SSE, CT_JSON, CT_NDJSON, CT_EVS, CT_HTML };

struct ts_tap {
  ts_tap_config cfg;
  ts_tap_cb cb;
  void *user;
  int framing;      /* FRAME_* */
  uint64_t base;    /* bytes before the first that is not whitespace */
  size_t head_len;
  char head[TAP_HEAD];
  int ct;           /* CT_*: the content type's verdict */
  char media[TAP_MEDIA + 1]; /* the media type, for messages ("" when none was given) */
  ts_sse sse;
  ts_json_seq jseq;
  ts_evs evs;
  char *sse_buf;    /* the framer's buffer: one SSE event's data, or one JSON value; NULL
                     * until an event needs it (grow_buf), then doubling up to max_event_bytes */
  size_t sse_size;  /* its size */
  uint32_t sse_grows; /* its allocations (ts__tap_buffer) */
  char buf0;        /* the framers' buffer while there is none (size 0: never touched) */
  ts_adapter *ms;
  ts_adapter_fragment_fn fragment; /* on_sse_direct's: ts_adapter_fragment_reader(ms) */
  call **calls; /* by index */
  uint32_t ncalls;
  uint64_t pos;     /* bytes fed */
  uint64_t ev_off;  /* offset stamped on events being emitted now */
  int aborted;
  int failed;
  int finished;
  int asking;       /* the SSE framer asks sse_keep about each named event: 1 while the
                     * format is undecided, 2 once decided (its row has a keep), else 0 */
  uint8_t piece_work; /* every argument piece has work after the tokenizer: delta events
                       * asked for, or raw input (call_args) */
  uint64_t keep_whole; /* name lengths the adapter keeps whole (ts_adapter_keep_whole_lengths),
                        * answered by sse_keep without asking; 0 until the format is known */
};

const char *ts_tap_type_name(int type) {
  switch (type) {
    case TS_TAP_TOOL_CALL_STARTED: return "tool_call_started";
    case TS_TAP_TOOL_CALL_DELTA: return "tool_call_delta";
    case TS_TAP_TOOL_CALL_HEARTBEAT: return "tool_call_heartbeat";
    case TS_TAP_TOOL_CALL_READY: return "tool_call_ready";
    case TS_TAP_TOOL_CALL_ERROR: return "tool_call_error";
    case TS_TAP_TEXT_DELTA: return "text_delta";
    case TS_TAP_TURN_FINISHED: return "turn_finished";
    case TS_TAP_STREAM_ERROR: return "stream_error";
  }
  return "unknown";
}

/* ---- emitting ------------------------------------------------------------------- */

static int emit(ts_tap *t, ts_tap_event *ev) {
  if (t->aborted) return 1;
  ev->offset = t->ev_off;
  if (ev->type == TS_TAP_STREAM_ERROR) t->failed = 1;
  if (t->cb(t->user, ev)) t->aborted = 1;
  return t->aborted;
}

/* The length of the first piece of [p, p + n) that fits TS_TAP_TEXT_PIECE, cut before a
 * UTF-8 lead byte (at most 3 continuation bytes back; text that is not UTF-8 is cut at the
 * limit). */
static size_t piece_len(const char *p, size_t n) {
  if (n <= TS_TAP_TEXT_PIECE) return n;
  size_t k = TS_TAP_TEXT_PIECE;
  for (int back = 0; back < 3 && ((unsigned char)p[k] & 0xC0) == 0x80; back++) k--;
  return ((unsigned char)p[k] & 0xC0) == 0x80 ? TS_TAP_TEXT_PIECE : k;
}

/* Emits ev once per piece of [p, p + n) (tap.h, "Pieces"), the piece in *field. */
static void emit_pieces(ts_tap *t, ts_tap_event *ev, ts_view *field, const char *p, size_t n) {
  while (n && !t->aborted) {
    size_t k = piece_len(p, n);
    *field = (ts_view){p, k};
    emit(t, ev);
    p += k, n -= k;
  }
}

static void call_event(call *c, ts_tap_event *ev, int type) {
  memset(ev, 0, sizeof *ev);
  ev->type = (uint8_t)type;
  ev->is_call = 1;
  ev->index = c->index;
  ev->turn = c->tap->cfg.turn;
  ev->call_id = (ts_view){c->id, c->id_len};
  if (c->synthesized) ev->provider_call_id = (ts_view){c->pid, c->pid_len};
  ev->tool = (ts_view){c->name, c->name_len};
}

static void stream_error(ts_tap *t, int code, const char *msg, size_t len) {
  ts_tap_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = TS_TAP_STREAM_ERROR;
  ev.code = code;
  ev.error = (ts_view){msg, len};
  emit(t, &ev);
}

static void fire_started(ts_tap *t, call *c, int with_progress) {
  if (c->started) return;
  c->started = 1;
  c->plain = t->cfg.format != TS_FORMAT_RAW;
  ts_tap_event ev;
  call_event(c, &ev, TS_TAP_TOOL_CALL_STARTED);
  if (with_progress) {
    ev.has_progress = 1;
    ev.progress = (ts_view){c->label.p ? c->label.p : "", c->label.len};
    ev.progress_truncated = c->label_cut;
  }
  emit(t, &ev);
  /* Deltas held back until now go out in one piece, right after STARTED. */
  if (t->cfg.deltas && c->pending.len) {
    call_event(c, &ev, TS_TAP_TOOL_CALL_DELTA);
    emit_pieces(t, &ev, &ev.delta, c->pending.p, c->pending.len);
  }
  ts_buf_fini(&c->pending);
}

static void fail_call(ts_tap *t, call *c, int code, uint64_t at) {
  if (c->failed || c->ready) return;
  fire_started(t, c, 0);
  c->failed = 1;
  char msg[160];
  int n;
  if (code == TS_E_TAP_INCOMPLETE || code == TS_E_LIMIT)
    n = snprintf(msg, sizeof msg, "%s (after %llu argument bytes)", ts_err_message(code),
                 (unsigned long long)at);
  else
    n = snprintf(msg, sizeof msg, "%s at argument byte %llu", ts_err_message(code),
                 (unsigned long long)at);
  ts_tap_event ev;
  call_event(c, &ev, TS_TAP_TOOL_CALL_ERROR);
  ev.code = code;
  ev.error = (ts_view){msg, (size_t)n};
  emit(t, &ev);
  ts_buf_fini(&c->args);
  ts_buf_fini(&c->label);
  ts_buf_fini(&c->pending);
}

static void fire_ready(ts_tap *t, call *c) {
  if (c->ready || c->failed) return;
  fire_started(t, c, 0); /* rule 3: the arguments completed without the progress value */
  c->ready = 1;
  ts_tap_event ev;
  call_event(c, &ev, TS_TAP_TOOL_CALL_READY);
  ev.arguments = (ts_view){c->args.p ? c->args.p : "{}", c->args.p ? c->args.len : 2};
  ev.arguments_buf = c->args.p ? &c->args : NULL; /* the callback may take it (tap.h) */
  emit(t, &ev);
  ts_buf_fini(&c->args);
  ts_buf_fini(&c->label);
}

/* ---- the argument tokenizer's callback ---------------------------------------------- */

/* Where a compact JSON writer sends its bytes. */
typedef void (*put_fn)(void *ctx, const char *p, size_t n);

static void put_buf(void *ctx, const char *p, size_t n) { ts_buf_append(ctx, p, n); }

/* Writes one token fragment in compact JSON (`sep` is the writer's comma state). */
static void compact_append(put_fn put, void *ctx, uint8_t *sep, const ts_json_token *tk) {
  int first = tk->flags & TS_JSON_FIRST, last = tk->flags & TS_JSON_LAST;
  int closing = tk->kind == TS_JSON_OBJECT_END || tk->kind == TS_JSON_ARRAY_END;
  if (first && *sep == ',' && !closing) put(ctx, ",", 1);
  if (first) *sep = 0;
  switch (tk->kind) {
    case TS_JSON_KEY:
    case TS_JSON_STRING:
      if (first) put(ctx, "\"", 1);
      put(ctx, tk->text, tk->len);
      if (last) {
        put(ctx, "\"", 1);
        if (tk->kind == TS_JSON_KEY)
          put(ctx, ":", 1);
        else
          *sep = ',';
      }
      break;
    case TS_JSON_OBJECT_BEGIN:
    case TS_JSON_ARRAY_BEGIN:
      put(ctx, tk->text, tk->len);
      break;
    default: /* numbers, literals, closes */
      put(ctx, tk->text, tk->len);
      if (last) *sep = ',';
  }
}

/* The label is built as its text streams, one UTF-8 character at a time: control
 * characters (C0, DEL and C1, U+0080..U+009F) are dropped, a run of them between
 * visible characters becomes one space, and the first visible character that does not
 * fit under progress_max ends the label and marks it cut. Controls past the cap do not
 * count as a cut. The text is valid UTF-8 (the tokenizer checked it), so a character's
 * length follows from its first byte. */
static void label_char(call *c, const char *ch, size_t n, size_t cap) {
  unsigned char b0 = (unsigned char)ch[0];
  int control = n == 1 ? (b0 < 0x20 || b0 == 0x7F)
                       : (n == 2 && b0 == 0xC2 && (unsigned char)ch[1] <= 0x9F);
  if (control) {
    if (c->label.len) c->label_gap = 1;
    return;
  }
  size_t need = n + (c->label_gap ? 1 : 0);
  if (c->label.len + need > cap) {
    c->label_cut = c->label_full = 1;
    return;
  }
  if (c->label_gap) ts_buf_putc(&c->label, ' ');
  c->label_gap = 0;
  ts_buf_append(&c->label, ch, n);
}

static void put_label(void *ctx, const char *p, size_t n) {
  call *c = ctx;
  size_t cap = c->tap->cfg.progress_max;
  for (size_t i = 0; i < n && !c->label_full; i++) {
    unsigned char b = (unsigned char)p[i];
    if (c->cp_need == 0) {
      size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
      if (len == 1) {
        label_char(c, (const char *)&p[i], 1, cap);
        continue;
      }
      c->cp[0] = (char)b;
      c->cp_len = 1;
      c->cp_need = (uint8_t)(len - 1);
      continue;
    }
    c->cp[c->cp_len++] = (char)b;
    if (--c->cp_need == 0) label_char(c, c->cp, c->cp_len, cap);
  }
}

static void label_append(call *c, const ts_json_token *tk) {
  if (c->label_full) return;
  if (!c->label_string) {
    compact_append(put_label, c, &c->label_sep, tk);
    return;
  }
  const char *p = tk->text;
  size_t n = tk->len;
  char out[64 + TS_JSON_UNESCAPE_SLACK];
  while (n && !c->label_full) {
    size_t k = n < 64 ? n : 64;
    ssize_t got = ts_json_unescape_feed(&c->label_dec, p, k, out);
    if (got < 0) return; /* cannot happen: the tokenizer validated the escapes */
    put_label(c, out, (size_t)got);
    p += k, n -= k;
  }
}

/* For raw input: the offset of the byte after the one that completed token `tk`. */
static uint64_t token_end(const ts_json_token *tk) {
  switch (tk->kind) {
    case TS_JSON_TRUE:
    case TS_JSON_FALSE:
    case TS_JSON_NULL:
      return tk->offset + tk->len;
    case TS_JSON_OBJECT_BEGIN:
    case TS_JSON_OBJECT_END:
    case TS_JSON_ARRAY_BEGIN:
    case TS_JSON_ARRAY_END:
      return tk->offset + 1;
    default: /* the closing quote, or the delimiter after a number */
      return tk->offset + tk->len + 1;
  }
}

static __attribute__((noinline)) int on_arg_token_rest(call *c, ts_tap *t, const ts_json_token *tk);

/* A middle piece that on_arg_token's short way does not take (more than 16 bytes, the
 * buffer to grow, the limit, the sticky error): ts_buf_append's. */
static __attribute__((noinline)) int arg_piece_append(call *c, const ts_json_token *tk) {
  if (ts_buf_append(&c->args, tk->text, tk->len)) {
    c->err = c->args.err;
    c->err_at = tk->offset;
    return 1;
  }
  return c->tap->aborted;
}

/* Most tokens of a big call are the middle pieces of one long string value: the compact
 * text is the piece itself, and nothing else applies to it (not the first token, no
 * separator, not the end, not raw input's offsets) unless the watcher wants it. Those are
 * appended here, a few bytes that fit in what the buffer holds copied without a call, in
 * a frame that saves no registers; every other token, and a piece that needs more,
 * goes on in a function of its own. */
static int on_arg_token(void *user, const ts_json_token *tk) {
  call *c = user;
  ts_tap *t = c->tap;
  if (__builtin_expect(tk->kind == TS_JSON_STRING && !(tk->flags & (TS_JSON_FIRST | TS_JSON_LAST)) && c->plain, 1)) {
    ts_buf *b = &c->args;
    size_t n = tk->len;
    if (n > 16 || b->err || n > b->max - b->len || b->cap - b->len <= n) return arg_piece_append(c, tk);
    ts_copy_short(b->p + b->len, tk->text, n);
    b->len += n;
    b->p[b->len] = '\0';
    return t->aborted;
  }
  return on_arg_token_rest(c, t, tk);
}

static int on_arg_token_rest(call *c, ts_tap *t, const ts_json_token *tk) {
  if (t->cfg.format == TS_FORMAT_RAW) t->ev_off = token_end(tk);
  if (!c->tok_first_seen) {
    c->tok_first_seen = 1;
    if (tk->kind != TS_JSON_OBJECT_BEGIN) {
      c->err = TS_E_TAP_NOT_OBJECT;
      c->err_at = tk->offset;
      return 1;
    }
  }
  compact_append(put_buf, &c->args, &c->sep, tk);
  if (c->args.err) {
    c->err = c->args.err;
    c->err_at = tk->offset;
    return 1;
  }
  if (c->watching && !c->started) {
    int v = ts_json_watch_token(&c->watch, tk);
    if (v != TS_JSON_WATCH_OUTSIDE) {
      if (!c->in_progress_value) {
        c->in_progress_value = 1;
        c->label_string = tk->kind == TS_JSON_STRING;
        ts_json_unescape_init(&c->label_dec);
        ts_buf_init(&c->label, t->cfg.progress_max);
      }
      label_append(c, tk);
      if (v == TS_JSON_WATCH_COMPLETE) fire_started(t, c, 1);
    }
  }
  if (tk->depth == 0 && tk->kind == TS_JSON_OBJECT_END) {
    c->complete_pending = 1;
    c->done_off = token_end(tk);
    /* raw input: stop at the closing brace, so READY fires before any later byte of
     * the same read is looked at (raw_feed checks those as trailing data) */
    if (t->cfg.format == TS_FORMAT_RAW) return 1;
  }
  return t->aborted;
}

/* ---- calls ---------------------------------------------------------------------------- */

static call *call_get(ts_tap *t, uint32_t index) {
  return index < t->ncalls ? t->calls[index] : NULL;
}

static void call_free(call *c) {
  if (!c) return;
  ts_buf_fini(&c->args);
  ts_buf_fini(&c->label);
  ts_buf_fini(&c->pending);
  free(c);
}

/* Whether another call of this turn has the id p[0..n) (as provider id or as call id). */
static int taken_in_turn(const ts_tap *t, const call *c, const char *p, size_t n) {
  for (uint32_t i = 0; i < t->ncalls; i++) {
    const call *o = t->calls[i];
    if (!o || o == c) continue;
    if ((o->pid_len == n && !memcmp(o->pid, p, n)) || (o->id_len == n && !memcmp(o->id, p, n)))
      return 1;
  }
  return 0;
}

/* Call c's call id (its provider id already set): the provider's, unless it sent none,
 * another call of this turn has it, or an earlier turn of the thread used it; then
 * "ts_<turn>_<index>" (with "_2", "_3" ... in the unlikely case a provider id of this
 * turn is spelled so). */
static void assign_id(ts_tap *t, call *c) {
  if (c->pid_len && !taken_in_turn(t, c, c->pid, c->pid_len) &&
      !(t->cfg.id_taken && t->cfg.id_taken(t->cfg.id_user, c->pid, c->pid_len))) {
    memcpy(c->id, c->pid, c->pid_len);
    c->id_len = c->pid_len;
    return;
  }
  c->synthesized = 1;
  for (unsigned k = 1;; k++) {
    int n = k == 1 ? snprintf(c->id, sizeof c->id, "ts_%u_%u", t->cfg.turn, c->index)
                   : snprintf(c->id, sizeof c->id, "ts_%u_%u_%u", t->cfg.turn, c->index, k);
    c->id_len = (size_t)n;
    if (!taken_in_turn(t, c, c->id, c->id_len)) return;
  }
}

static call *call_begin(ts_tap *t, uint32_t index, ts_view id, ts_view name) {
  if (index >= TS_TAP_MAX_CALLS) return NULL;
  if (index >= t->ncalls) {
    call **nc = realloc(t->calls, (index + 1) * sizeof *nc);
    if (!nc) return NULL;
    for (uint32_t i = t->ncalls; i <= index; i++) nc[i] = NULL;
    t->calls = nc;
    t->ncalls = index + 1;
  }
  call *c = t->calls[index];
  if (c) return c; /* begun twice: the adapter's guarantee makes this a no-op */
  c = calloc(1, sizeof *c);
  if (!c) return NULL;
  t->calls[index] = c;
  c->tap = t;
  c->index = index;
  c->pid_len = id.len < sizeof c->pid ? id.len : sizeof c->pid;
  if (c->pid_len) memcpy(c->pid, id.p, c->pid_len);
  assign_id(t, c);
  c->name_len = name.len < sizeof c->name ? name.len : sizeof c->name;
  if (c->name_len) memcpy(c->name, name.p, c->name_len);
  c->next_heartbeat = t->cfg.heartbeat_bytes;
  ts_json_tok_init(&c->tok, TS_JSON_DEFAULT_MAX_DEPTH, on_arg_token, c);
  ts_buf_init(&c->args, t->cfg.max_args_bytes);
  ts_buf_init(&c->pending, t->cfg.max_args_bytes);
  size_t arg_len = 0;
  const char *arg = t->cfg.progress_arg
                        ? t->cfg.progress_arg(t->cfg.progress_user, c->name, c->name_len, &arg_len)
                        : NULL;
  if (arg) {
    c->watching = 1; /* (plain once STARTED) */
    ts_json_watch_init(&c->watch, arg, arg_len);
  } else {
    fire_started(t, c, 0); /* rule 2 */
  }
  return c;
}

static __attribute__((noinline)) void call_args_rest(ts_tap *t, call *c, const char *p, size_t n,
                                                     uint64_t piece_end, int r);

/* Feeds one piece of argument text to call c. The common piece (no error, not the end, no
 * delta events asked for, no heartbeat due, not raw input) needs nothing after the
 * tokenizer; the rest is call_args_rest's, out of line so that the common piece pays for
 * none of its registers. */
static inline void call_args(ts_tap *t, call *c, const char *p, size_t n) {
  if (c->failed || n == 0) return;
  uint64_t piece_end = t->ev_off; /* raw input: the offset after this piece */
  c->arg_bytes += n;
  c->complete_pending = 0;
  int r = ts_json_tok_feed(&c->tok, p, n);
  if (t->aborted) return;
  if (!r && !c->complete_pending && !t->piece_work && c->arg_bytes < c->next_heartbeat) return;
  call_args_rest(t, c, p, n, piece_end, r);
}

/* call_args for on_sse_direct's fragment, whose view is read again from *piece after the
 * tokenizer (the view is in the caller's frame, whose address the adapter had: the
 * compiler reloads it rather than keep it in saved registers across the call). Never
 * raw input, so the piece's end offset, which call_args_rest reads only for raw input,
 * is not kept either. */
static inline void call_args_view(ts_tap *t, call *c, const ts_view *piece) {
  size_t n = piece->len;
  if (c->failed || n == 0) return;
  c->arg_bytes += n;
  c->complete_pending = 0;
  int r = ts_json_tok_feed(&c->tok, piece->p, n);
  if (t->aborted) return;
  if (!r && !c->complete_pending && !t->piece_work && c->arg_bytes < c->next_heartbeat) return;
  call_args_rest(t, c, piece->p, piece->len, t->ev_off, r);
}

static void call_args_rest(ts_tap *t, call *c, const char *p, size_t n, uint64_t piece_end, int r) {
  if (t->cfg.format == TS_FORMAT_RAW && r == TS_E_ABORTED && c->complete_pending) {
    /* the tokenizer stopped at the arguments' closing brace (on_arg_token): the piece
     * ends there; raw_feed looks at what follows */
    size_t used = (size_t)(c->done_off - (piece_end - n));
    c->arg_bytes -= n - used;
    n = used;
    piece_end = c->done_off;
    r = TS_E_OK;
  }
  if (t->cfg.format == TS_FORMAT_RAW) t->ev_off = piece_end;
  if (r) {
    /* raw input: the error is stamped with the byte after the offending one */
    if (t->cfg.format == TS_FORMAT_RAW)
      t->ev_off = (c->err ? c->err_at : ts_json_tok_error_offset(&c->tok)) + 1;
    if (c->ready) {
      /* Bytes after arguments already reported complete: the call stays ready (it was
       * valid), the stream is malformed; say so once and read no more of this call. */
      char msg[200];
      int m = snprintf(msg, sizeof msg, "call #%u (%.*s): data after its complete arguments, at "
                       "argument byte %llu", c->index, (int)(c->name_len > 64 ? 64 : c->name_len),
                       c->name, (unsigned long long)ts_json_tok_error_offset(&c->tok));
      c->failed = 1;
      stream_error(t, r, msg, (size_t)m);
      return;
    }
    if (c->err)
      fail_call(t, c, c->err, c->err_at);
    else
      fail_call(t, c, r, ts_json_tok_error_offset(&c->tok));
    return;
  }
  if (t->cfg.deltas && !c->ready) { /* nothing about a call follows its READY */
    if (c->started) {
      ts_tap_event ev;
      call_event(c, &ev, TS_TAP_TOOL_CALL_DELTA);
      emit_pieces(t, &ev, &ev.delta, p, n);
    } else if (ts_buf_append(&c->pending, p, n)) {
      fail_call(t, c, TS_E_LIMIT, c->arg_bytes);
      return;
    }
  }
  /* A heartbeat per interval crossed; intervals crossed before STARTED pass silently
   * (rule 4: nothing about a call comes before it). */
  if (c->arg_bytes >= c->next_heartbeat) {
    if (c->started && !c->ready) {
      ts_tap_event ev;
      call_event(c, &ev, TS_TAP_TOOL_CALL_HEARTBEAT);
      ev.bytes = c->arg_bytes;
      emit(t, &ev);
    }
    c->next_heartbeat = (c->arg_bytes / t->cfg.heartbeat_bytes + 1) * t->cfg.heartbeat_bytes;
  }
  if (c->complete_pending) {
    if (t->cfg.format == TS_FORMAT_RAW) t->ev_off = c->done_off;
    fire_ready(t, c);
  }
}

/* The provider ended call c (or the turn ended around it). */
static void call_end(ts_tap *t, call *c) {
  if (c->ended) return;
  c->ended = 1;
  if (c->ready || c->failed) return;
  if (c->arg_bytes == 0) { /* no arguments at all: a tool without parameters */
    fire_ready(t, c);
    return;
  }
  fail_call(t, c, TS_E_TAP_INCOMPLETE, c->arg_bytes); /* ready would have fired already */
}

/* ---- what the reply was, when it was not a stream -------------------------------------- */

/* The first bytes of the reply as printable ASCII (other bytes become '.'), for a message. */
static size_t head_text(const ts_tap *t, char *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < t->head_len && n + 1 < cap; i++) {
    unsigned char c = (unsigned char)t->head[i];
    out[n++] = c >= 0x20 && c < 0x7F ? (char)c : c == '\n' || c == '\r' || c == '\t' ? ' ' : '.';
  }
  out[n] = '\0';
  return n;
}

/* auto found no format: say what the reply began with, so that a user sees an error page,
 * a proxy's message or an empty reply for what it is. */
static void unknown_format(ts_tap *t) {
  char head[TAP_HEAD + 1], ct[TAP_MEDIA + 32] = "", msg[TAP_HEAD + TAP_MEDIA + 128];
  int n;
  if (t->media[0]) snprintf(ct, sizeof ct, " (Content-Type: %s)", t->media);
  if (head_text(t, head, sizeof head))
    n = snprintf(msg, sizeof msg, "%s%s; the reply begins: %s%s",
                 ts_err_message(TS_E_MS_UNKNOWN_FORMAT), ct, head, t->head_len == TAP_HEAD ? "..." : "");
  else
    n = snprintf(msg, sizeof msg, "%s%s: the reply is empty", ts_err_message(TS_E_MS_UNKNOWN_FORMAT), ct);
  stream_error(t, TS_E_MS_UNKNOWN_FORMAT, msg, (size_t)n);
}

/* ---- the adapter's callback ---------------------------------------------------------- */

static int on_model_event(void *user, const ts_adapter_event *me) {
  ts_tap *t = user;
  ts_tap_event ev;
  call *c;
  switch (me->kind) {
    case TS_ADAPTER_TEXT_DELTA:
      if (!t->cfg.text || me->text.len == 0) break;
      memset(&ev, 0, sizeof ev);
      ev.type = TS_TAP_TEXT_DELTA;
      emit_pieces(t, &ev, &ev.text, me->text.p, me->text.len);
      break;
    case TS_ADAPTER_CALL_BEGIN:
      if (!call_begin(t, me->index, me->id, me->name))
        stream_error(t, TS_E_NOMEM, "cannot track another tool call", 30);
      break;
    case TS_ADAPTER_CALL_ARGS:
      if ((c = call_get(t, me->index))) call_args(t, c, me->text.p, me->text.len);
      break;
    case TS_ADAPTER_CALL_END:
      if ((c = call_get(t, me->index))) call_end(t, c);
      break;
    case TS_ADAPTER_TURN_END:
      for (uint32_t i = 0; i < t->ncalls; i++)
        if (t->calls[i]) call_end(t, t->calls[i]);
      memset(&ev, 0, sizeof ev);
      ev.type = TS_TAP_TURN_FINISHED;
      ev.stop_reason = me->stop_reason;
      ev.usage = me->usage;
      emit(t, &ev);
      break;
    case TS_ADAPTER_ERROR:
      if (me->code == TS_E_MS_UNKNOWN_FORMAT) {
        unknown_format(t);
        break;
      }
      stream_error(t, me->code, me->error.p, me->error.len);
      break;
  }
  return t->aborted;
}

/* The adapter's fragment path (ts_adapter_set_args_fn): CALL_ARGS without the event. */
static int on_call_args(void *user, uint32_t index, ts_view text) {
  ts_tap *t = user;
  call *c = call_get(t, index);
  if (c) call_args(t, c, text.p, text.len);
  return t->aborted;
}

/* ---- the SSE framer's callback ------------------------------------------------------- */

static int on_sse_event_rest(ts_tap *t, const ts_sse_event *se);

/* The common event (whole, not an error, the format decided) here; the rest out of line,
 * so that this frame saves as little as a call needs. */
static int on_sse_event(void *user, const ts_sse_event *se) {
  ts_tap *t = user;
  if (__builtin_expect(se->kind != TS_SSE_ERROR && !se->cut && t->asking != 1, 1)) {
    t->ev_off = t->base + se->end_offset;
    ts_adapter_feed_event(t->ms, se->name, se->name_len, se->data, se->data_len);
    return t->aborted;
  }
  return on_sse_event_rest(t, se);
}

/* The framer's callback once the format is known to be one whose reader's memo the tap
 * may read itself (ts_adapter_fragments; the keep question then is never asked): the
 * common event is an argument fragment that the adapter hands back rather than sends
 * through ts_adapter_feed_event, the reader and on_call_args, and it goes to the call's
 * tokenizer from here; anything else goes the usual way. */
static int on_sse_direct(void *user, const ts_sse_event *se) {
  ts_tap *t = user;
  if (__builtin_expect(se->kind != TS_SSE_ERROR && !se->cut, 1)) {
    t->ev_off = t->base + se->end_offset;
    ts_adapter_fragment fr;
    if (t->fragment(t->ms, se->name, se->name_len, se->data, se->data_len, &fr)) {
      call *c = call_get(t, fr.index);
      if (c) call_args_view(t, c, &fr.text);
      if (t->aborted) ts_adapter_abort(t->ms); /* as on_call_args returning nonzero */
      return t->aborted;
    }
    ts_adapter_feed_event(t->ms, se->name, se->name_len, se->data, se->data_len);
    return t->aborted;
  }
  return on_sse_event_rest(t, se);
}

static __attribute__((noinline)) int on_sse_event_rest(ts_tap *t, const ts_sse_event *se) {
  if (se->kind == TS_SSE_ERROR) {
    t->ev_off = t->base + se->err_offset;
    const char *msg = ts_err_message(se->code);
    stream_error(t, se->code, msg, strlen(msg));
    return t->aborted;
  }
  t->ev_off = t->base + se->end_offset;
  if (se->cut)
    ts_adapter_feed_cut(t->ms, se->name, se->name_len);
  else
    ts_adapter_feed_event(t->ms, se->name, se->name_len, se->data, se->data_len);
  if (t->asking == 1 && ts_adapter_format_of(t->ms) != TS_FORMAT_AUTO) { /* decided */
    t->asking = 2;
    t->keep_whole = ts_adapter_keep_whole_lengths(t->ms);
    if (!ts_adapter_keeps(t->ms)) { /* the format keeps every event whole: stop asking */
      ts_sse_set_keep(&t->sse, NULL, NULL);
      t->asking = 0;
      if (ts_adapter_fragments(t->ms)) {
        t->fragment = ts_adapter_fragment_reader(t->ms); /* the match's choice, made once */
        ts_sse_set_cb(&t->sse, on_sse_direct, t);
      }
    }
  }
  return t->aborted;
}

/* The framer asks, per named event, how much of it the adapter can use. An event the
 * adapter would drop whole because it repeats arguments is still read while a call is
 * neither ready nor failed: it may be what ends that call, at that event's offset. */
static size_t sse_keep(void *user, const char *name, size_t len) {
  ts_tap *t = user;
  if (len < 64 && ((t->keep_whole >> len) & 1)) return TS_SSE_KEEP_ALL; /* the common name */
  size_t k = ts_adapter_keep(t->ms, name, len);
  if (k == 0)
    for (uint32_t i = 0; i < t->ncalls; i++)
      if (t->calls[i] && !t->calls[i]->ready && !t->calls[i]->failed) return TS_SSE_KEEP_ALL;
  return k;
}

/* ---- the JSON framer's callback (NDJSON, a JSON array, a plain JSON body) ------------- */

static int on_json_value(void *user, const ts_json_seq_item *it) {
  ts_tap *t = user;
  if (it->kind == TS_JSON_SEQ_ERROR) {
    t->ev_off = t->base + it->err_offset + 1;
    const char *msg = ts_err_message(it->code);
    stream_error(t, it->code, msg, strlen(msg));
    return t->aborted;
  }
  t->ev_off = t->base + it->end_offset;
  ts_adapter_feed_event(t->ms, NULL, 0, it->data, it->len);
  return t->aborted;
}

/* ---- the AWS event stream's callback (Bedrock) ------------------------------------------- */

static int on_evs_message(void *user, const ts_evs_item *it) {
  ts_tap *t = user;
  if (it->kind == TS_EVS_ERROR) {
    t->ev_off = t->base + it->err_offset;
    const char *msg = ts_err_message(it->code);
    stream_error(t, it->code, msg, strlen(msg));
    return t->aborted;
  }
  t->ev_off = t->base + it->end_offset;
  if (it->message_type.len == 5 && !memcmp(it->message_type.p, "error", 5)) {
    /* an error the service did not model: its text is a header (`:error-message`, else
     * the `:error-code`), not the payload */
    ts_view m = it->error_message.len ? it->error_message : it->event_type;
    ts_adapter_feed_error(t->ms, m.p, m.len);
    return t->aborted;
  }
  ts_adapter_feed_event(t->ms, it->event_type.p, it->event_type.len, it->payload, it->payload_len);
  return t->aborted;
}

/* The framers' grow hook (one hook for the three: only one of them runs per tap). The
 * buffer is only written for an event cut between two feeds, or one of several data
 * lines (a whole event is read where it lies), so most taps never allocate it; the first
 * growth takes TAP_BUF_START bytes and each later one doubles, up to max_event_bytes:
 * a huge event costs about one copy of itself (realloc moves big blocks by remapping),
 * never the limit reserved up front (an mmap and a munmap per tapped reply, and page
 * tables, when it was). Refused: that event's TS_E_NOMEM (the framers' contracts). */
#define TAP_BUF_START 4096
static char *grow_buf(void *user, char *buf, size_t need, size_t *size) {
  ts_tap *t = user;
  size_t cap = t->cfg.max_event_bytes, n = t->sse_size < TAP_BUF_START ? TAP_BUF_START : t->sse_size;
  (void)buf; /* t->sse_buf */
  while (n < need && n < cap) n = n > cap / 2 ? cap : n * 2;
  if (n > cap) n = cap;
  if (n < need) return NULL; /* over the cap: the framers never ask */
  char *b = realloc(t->sse_buf, n);
  if (!b) return NULL;
  t->sse_buf = b;
  t->sse_size = n;
  t->sse_grows++;
  *size = n;
  return b;
}

/* Decides the framing from the content type when it tells (tap.h, "Content type"), else
 * from the reply's first byte that is not whitespace: `{` is JSON values (NDJSON, or one
 * body: an error reply), `[` one JSON array of events, `<` an HTML page (an error page
 * from a proxy or a login wall: reported, the rest ignored); anything else is SSE.
 * Leading whitespace means nothing in any of them. */
static void decide_framing(ts_tap *t, char c) {
  switch (t->ct) {
    case CT_SSE: t->framing = FRAME_SSE; return;
    case CT_HTML: t->framing = FRAME_IGNORE; return;
    case CT_EVS: c = 0; break;
    case CT_NDJSON: c = '{'; break;
    case CT_JSON: c = c == '[' ? '[' : '{'; break;
    default: break;
  }
  if (c == 0) { /* a binary frame's length: under 16 MiB, its first byte is 0 */
    t->framing = FRAME_EVS;
    ts_evs_init(&t->evs, &t->buf0, t->cfg.max_event_bytes, on_evs_message, t);
    ts_evs_set_grow(&t->evs, 0, grow_buf, t);
  } else if (c == '{' || c == '[') {
    t->framing = c == '[' ? FRAME_JSON_ARRAY : FRAME_JSON;
    ts_json_seq_init(&t->jseq, c == '[', &t->buf0, t->cfg.max_event_bytes, on_json_value, t);
    ts_json_seq_set_grow(&t->jseq, 0, grow_buf, t);
  } else if (c == '<') {
    t->framing = FRAME_IGNORE;
  } else {
    t->framing = FRAME_SSE;
  }
}

static void not_a_stream(ts_tap *t) {
  char head[TAP_HEAD + 1], ct[TAP_MEDIA + 32] = "", msg[TAP_HEAD + TAP_MEDIA + 128];
  int n;
  if (t->media[0]) snprintf(ct, sizeof ct, " (Content-Type: %s)", t->media);
  if (head_text(t, head, sizeof head))
    n = snprintf(msg, sizeof msg, "the reply is an HTML page%s, not a model stream; it begins: %s%s",
                 ct, head, t->head_len == TAP_HEAD ? "..." : "");
  else
    n = snprintf(msg, sizeof msg, "the reply is an HTML page%s, not a model stream: it is empty", ct);
  t->ev_off = t->pos;
  stream_error(t, TS_E_MS_NOT_STREAM, msg, (size_t)n);
}

/* ---- raw input -------------------------------------------------------------------------- */

/* Raw input is one call's argument bytes, read in chunks the tap does not choose. Every
 * event must come out the same whatever the chunks (tap.h), so each decision that could
 * depend on where a read ends is taken at a byte position instead:
 *   - pieces are cut at heartbeat boundaries, so heartbeats and their offsets are fixed;
 *   - pieces are cut at max_args_bytes: the byte that would exceed it fails the call
 *     (TS_E_LIMIT, "after max_args_bytes argument bytes"), stamped with the byte after it;
 *   - the first byte that is not whitespace decides "not an object" by itself (the
 *     tokenizer would report a number such as `0` only once it ends, so `00` read whole
 *     and `0`|`0` would disagree);
 *   - the tokenizer stops at the closing brace and READY fires there; bytes after it
 *     are trailing data checked here: whitespace is fine, anything else is one
 *     STREAM_ERROR at that byte, after the READY (the same as when they arrive in a
 *     later read). */
static int is_ws(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

/* Bytes after a ready call's arguments. */
static void raw_trailing(ts_tap *t, call *c, const char *p, size_t n) {
  size_t i = 0;
  while (i < n && is_ws(p[i])) i++;
  if (i == n || c->failed) return;
  uint64_t at = t->pos + i;
  t->ev_off = at + 1;
  char msg[200];
  int m = snprintf(msg, sizeof msg,
                   "call #%u (%.*s): data after its complete arguments, at argument byte %llu",
                   c->index, (int)(c->name_len > 64 ? 64 : c->name_len), c->name,
                   (unsigned long long)at);
  c->failed = 1;
  stream_error(t, TS_E_JSON_TRAILING, msg, (size_t)m);
}

static void raw_feed(ts_tap *t, const char *p, size_t n) {
  call *c = t->calls ? t->calls[0] : NULL;
  uint64_t max = t->cfg.max_args_bytes;
  while (n && c && !t->aborted) {
    if (c->ready || c->failed) { /* nothing of these bytes is argument text */
      raw_trailing(t, c, p, n);
      t->pos += n;
      return;
    }
    if (c->arg_bytes >= max) { /* this byte would be one more than the cap */
      t->ev_off = t->pos + 1;
      fail_call(t, c, TS_E_LIMIT, c->arg_bytes);
      continue;
    }
    size_t k = n;
    if (max - c->arg_bytes < k) k = (size_t)(max - c->arg_bytes);
    if (!c->failed && c->next_heartbeat > c->arg_bytes &&
        c->next_heartbeat - c->arg_bytes < k)
      k = (size_t)(c->next_heartbeat - c->arg_bytes);
    if (!c->raw_began) {
      size_t i = 0;
      while (i < k && is_ws(p[i])) i++;
      if (i == 0 && p[0] != '{') {
        t->ev_off = t->pos + 1;
        fail_call(t, c, TS_E_TAP_NOT_OBJECT, c->arg_bytes);
        continue;
      }
      if (i < k && p[i] == '{') c->raw_began = 1;
      if (i < k && p[i] != '{') k = i; /* the whitespace first, the offending byte next */
    }
    /* Events are stamped with the byte after the one that completed them: tokens that
     * complete inside this piece restamp ev_off in on_arg_token; deltas and heartbeats
     * are stamped with the end of the piece. */
    t->ev_off = t->pos + k;
    uint64_t before = c->arg_bytes;
    call_args(t, c, p, k);
    size_t used = c->ready ? (size_t)(c->arg_bytes - before) : k; /* READY: up to the brace */
    t->pos += used;
    p += used, n -= used;
  }
}

/* ---- the content type ------------------------------------------------------------------- */

/* Media types whose framing the tap knows; the providers' own (bedrock, ollama) come with
 * their format from the provider table. */
static const struct {
  const char *mt;
  int ct;
} media_types[] = {
    {"text/event-stream", CT_SSE},
    {"application/json", CT_JSON},
    {"application/x-ndjson", CT_NDJSON},
    {"application/vnd.amazon.eventstream", CT_EVS},
    {"text/html", CT_HTML},
};

/* The media type of a Content-Type: the part before any ';', without whitespace. */
static ts_view media_of(const char *ct, size_t len) {
  size_t i = 0, n = 0;
  while (i < len && is_ws(ct[i])) i++;
  while (i + n < len && ct[i + n] != ';' && !is_ws(ct[i + n])) n++;
  return (ts_view){ct ? ct + i : "", n};
}

/* Its CT_* verdict (CT_OTHER for one the tap does not know, CT_NONE for none). */
static int ct_of(ts_view mt) {
  if (!mt.len) return CT_NONE;
  for (size_t k = 0; k < sizeof media_types / sizeof media_types[0]; k++)
    if (strlen(media_types[k].mt) == mt.len && !strncasecmp(media_types[k].mt, mt.p, mt.len))
      return media_types[k].ct;
  return CT_OTHER;
}

int ts_tap_media(const char *ct, size_t len) {
  if (!ct) return TS_TAP_MEDIA_OTHER;
  switch (ct_of(media_of(ct, len))) {
    case CT_SSE: case CT_NDJSON: case CT_EVS: return TS_TAP_MEDIA_STREAM;
    case CT_JSON: return TS_TAP_MEDIA_JSON;
    case CT_HTML: return TS_TAP_MEDIA_HTML;
    default: return TS_TAP_MEDIA_OTHER;
  }
}

int ts_tap_content_type(ts_tap *t, const char *ct, size_t len) {
  if (!t || (!ct && len) || t->cfg.format == TS_FORMAT_RAW || t->ct || t->pos ||
      t->framing != FRAME_UNDECIDED)
    return TS_E_INVAL;
  ts_view mt = media_of(ct, len);
  t->ct = ct_of(mt);
  if (t->ct == CT_NONE) return TS_E_OK;
  size_t keep = mt.len < TAP_MEDIA ? mt.len : TAP_MEDIA;
  for (size_t k = 0; k < keep; k++) { /* printable for the messages that quote it */
    unsigned char c = (unsigned char)mt.p[k];
    t->media[k] = c >= 0x20 && c < 0x7F ? (char)c : '?';
  }
  t->media[keep] = '\0';
  if (t->ct == CT_HTML) return TS_E_OK; /* never a model stream, whatever the format */
  if (t->cfg.format != TS_FORMAT_AUTO) {
    t->ct = CT_OTHER; /* the caller's format decides; the framing by the first bytes */
    return TS_E_OK;
  }
  ts_format f = ts_provider_for_media_type(mt.p, mt.len);
  if (f != TS_FORMAT_AUTO) ts_adapter_narrow(t->ms, f, 0);
  else if (t->ct == CT_SSE) ts_adapter_narrow(t->ms, TS_FORMAT_AUTO, 1);
  return TS_E_OK;
}

/* ---- public --------------------------------------------------------------------------- */

int ts_tap_new(ts_tap **out, const ts_tap_config *cfg, ts_tap_cb cb, void *user) {
  if (!out || !cfg || !cb) return TS_E_INVAL;
  if (cfg->format == TS_FORMAT_RAW && !cfg->raw_tool) return TS_E_INVAL;
  if ((unsigned)cfg->format > TS_FORMAT_RAW || cfg->progress_max > TS_TAP_PROGRESS_LIMIT)
    return TS_E_INVAL;
  ts_tap *t = calloc(1, sizeof *t);
  if (!t) return TS_E_NOMEM;
  t->cfg = *cfg;
  t->piece_work = cfg->deltas || cfg->format == TS_FORMAT_RAW;
  if (!t->cfg.heartbeat_bytes) t->cfg.heartbeat_bytes = TS_TAP_HEARTBEAT_BYTES;
  if (!t->cfg.turn) t->cfg.turn = 1;
  if (!t->cfg.progress_max) t->cfg.progress_max = TS_TAP_PROGRESS_MAX;
  if (!t->cfg.max_args_bytes) t->cfg.max_args_bytes = TS_TAP_MAX_ARGS_BYTES;
  if (!t->cfg.max_event_bytes)
    t->cfg.max_event_bytes = t->cfg.max_args_bytes > SIZE_MAX - TS_TAP_EVENT_SLACK - TS_SSE_LINE_SLACK
                                 ? SIZE_MAX - TS_TAP_EVENT_SLACK - TS_SSE_LINE_SLACK
                                 : t->cfg.max_args_bytes + TS_TAP_EVENT_SLACK;
  t->cb = cb;
  t->user = user;
  int rc = TS_E_OK;
  if (cfg->format == TS_FORMAT_RAW) {
    size_t len = strlen(cfg->raw_tool);
    /* call 0 of a fresh tap can only fail for memory */
    if (!call_begin(t, 0, (ts_view){"", 0}, (ts_view){cfg->raw_tool, len})) rc = TS_E_NOMEM;
  } else {
    rc = ts_adapter_new(&t->ms, cfg->format, on_model_event, t);
    if (rc == TS_E_OK) ts_adapter_set_args_fn(t->ms, on_call_args);
    if (rc == TS_E_OK)
      rc = ts_sse_init(&t->sse, &t->buf0, t->cfg.max_event_bytes,
                       t->cfg.max_event_bytes + TS_SSE_LINE_SLACK, on_sse_event, t);
    if (rc == TS_E_OK) rc = ts_sse_set_grow(&t->sse, 0, grow_buf, t);
    if (rc == TS_E_OK) ts_sse_set_keep(&t->sse, sse_keep, t);
    t->asking = 1;
  }
  if (rc == TS_E_OK && cfg->content_type && cfg->format != TS_FORMAT_RAW)
    ts_tap_content_type(t, cfg->content_type, strlen(cfg->content_type));
  if (rc != TS_E_OK) {
    ts_tap_free(t);
    return rc;
  }
  t->cfg.content_type = NULL; /* read here only: the caller's string is not kept */
  *out = t;
  return TS_E_OK;
}

void ts_tap_free(ts_tap *t) {
  if (!t) return;
  for (uint32_t i = 0; i < t->ncalls; i++) call_free(t->calls[i]);
  free(t->calls);
  ts_adapter_free(t->ms);
  free(t->sse_buf);
  free(t);
}

static __attribute__((noinline)) int feed_any(ts_tap *t, char *buf, size_t len);

int ts_tap_feed(ts_tap *t, char *buf, size_t len) {
  if (t->framing == FRAME_SSE && t->head_len == TAP_HEAD && !t->aborted) {
    /* the steady state of a stream (framed as SSE, its head kept): straight to the framer,
     * in a function small enough to save no registers of its own */
    t->pos += len;
    ts_sse_feed(&t->sse, buf, len);
    return t->aborted ? TS_E_ABORTED : TS_E_OK;
  }
  return feed_any(t, buf, len);
}

/* Everything else: raw input, the framing still undecided, the head being kept. */
static int feed_any(ts_tap *t, char *buf, size_t len) {
  if (t->aborted) return TS_E_ABORTED;
  if (t->cfg.format == TS_FORMAT_RAW) {
    raw_feed(t, buf, len);
    return t->aborted ? TS_E_ABORTED : TS_E_OK;
  }
  if (t->framing == FRAME_UNDECIDED) {
    size_t k = 0; /* a binary stream has no whitespace to skip */
    while (t->ct != CT_EVS && k < len && is_ws(buf[k])) k++;
    t->pos += k;
    t->base = t->pos;
    buf += k, len -= k;
    if (!len) return TS_E_OK;
    decide_framing(t, buf[0]);
  }
  if (t->head_len < TAP_HEAD) {
    size_t k = len < TAP_HEAD - t->head_len ? len : TAP_HEAD - t->head_len;
    memcpy(t->head + t->head_len, buf, k);
    t->head_len += k;
  }
  t->pos += len;
  switch (t->framing) {
    case FRAME_SSE: ts_sse_feed(&t->sse, buf, len); break;
    case FRAME_JSON:
    case FRAME_JSON_ARRAY: ts_json_seq_feed(&t->jseq, buf, len); break;
    case FRAME_EVS: ts_evs_feed(&t->evs, buf, len); break;
    default: break; /* FRAME_IGNORE: reported at the end, when the head is known */
  }
  return t->aborted ? TS_E_ABORTED : TS_E_OK;
}

int ts_tap_finish(ts_tap *t) {
  if (t->finished) return t->aborted ? TS_E_ABORTED : TS_E_OK;
  t->finished = 1;
  t->ev_off = t->pos;
  if (t->cfg.format == TS_FORMAT_RAW) {
    call *c = t->calls[0];
    if (!c->ready && !c->failed)
      fail_call(t, c, c->arg_bytes ? TS_E_TAP_INCOMPLETE : TS_E_JSON_EMPTY, c->arg_bytes);
    return t->aborted ? TS_E_ABORTED : TS_E_OK;
  }
  if (t->framing == FRAME_IGNORE || t->ct == CT_HTML) {
    not_a_stream(t); /* and nothing else: there was no stream to be truncated */
    return t->aborted ? TS_E_ABORTED : TS_E_OK;
  }
  int cut = 0;
  if (t->framing == FRAME_SSE) {
    cut = ts_sse_cut(&t->sse);
    ts_sse_finish(&t->sse);
  }
  if (t->framing == FRAME_JSON || t->framing == FRAME_JSON_ARRAY) cut = ts_json_seq_cut(&t->jseq);
  if (t->framing == FRAME_EVS) cut = ts_evs_cut(&t->evs);
  t->ev_off = t->pos;
  if (cut)
    ts_adapter_cut(t->ms);
  else
    ts_adapter_finish(t->ms);
  t->ev_off = t->pos;
  for (uint32_t i = 0; i < t->ncalls && !t->aborted; i++) {
    call *c = t->calls[i];
    if (c && !c->ready && !c->failed) fail_call(t, c, TS_E_TAP_INCOMPLETE, c->arg_bytes);
  }
  return t->aborted ? TS_E_ABORTED : TS_E_OK;
}

int ts_tap_failed(const ts_tap *t) { return t->failed; }

uint64_t ts_tap_offset(const ts_tap *t) { return t->pos; }

size_t ts__tap_buffer(const ts_tap *t, uint32_t *grows) {
  if (grows) *grows = t->sse_grows;
  return t->sse_size;
}
