/*
 * openai_chat.c: Chat Completions chunks into the adapter's vocabulary.
 *
 * A chunk is `{"choices":[{"index":0,"delta":{...},"finish_reason":...}], "usage":...}`.
 * The delta carries text (`content`) and tool calls (`tool_calls[]`), each entry a
 * piece of one call: `index`, and on the call's first piece `id`, `type` and
 * `function.name`; `function.arguments` is the next fragment of the arguments' JSON
 * text, itself a JSON string that we decode in place before reporting it.
 *
 * The difficulty is naming the call an entry belongs to, because servers that speak
 * this format differ: OpenAI sends `index` on every piece; some compatible servers
 * reuse index 0 for every call and tell calls apart only by a new `id`; others send
 * no index at all (whole calls, matched by `id`), or pieces with neither (which
 * continue the call in progress, unless a piece brings a name after that call's
 * arguments: Gemini's OpenAI endpoint sends whole calls with `id: ""` and no index).
 * The rules, in adapter.h, cover all four without guessing beyond what the wire says.
 *
 * Ending: `finish_reason` ends every call (a chunk's tool calls are read before its
 * finish_reason, for servers that send both together); the usage chunk
 * (`choices: []`) follows; `[DONE]` ends the turn. Groq sends its counts in the last
 * chunk's `x_groq.usage` instead, read when the chunk has no `usage` of its own. An
 * `{"error": {...}}` payload is the provider's terminal error.
 */
#define TS_ADAPTER_INTERNAL
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_scan.h"
#include "stream/json_scan_impl.h"
#include "stream/json_shape.h"
#include "stream/json_view.h"
#include "stream/provider.h"

/* The slot of one tool_calls entry, by either path: its index (-1: none), id and name
 * (decoded) name the call it continues or begin a new one. -1 when the call was refused. */
static int call_slot(ts_adapter *a, int64_t index, ts_view id, ts_view name) {
  int slot;
  if (index >= 0) {
    slot = ts__adapter_call_by_nkey(a, index);
    if (slot >= 0 && id.len > 0) { /* an index reused with a different id: a new call */
      ts_view old = ts__adapter_call_key(a, slot);
      if (old.len > 0 && (old.len != id.len || memcmp(old.p, id.p, id.len) != 0)) slot = -1;
    }
  } else if (id.len > 0) {
    slot = ts__adapter_call_by_key(a, id);
  } else {
    slot = ts__adapter_call_last(a);
    /* Neither index nor id (Gemini's OpenAI endpoint sends whole calls so, `id: ""`,
     * `index` null or absent, several in one chunk): a name is sent with a call's first
     * piece only, so a named piece after the last call's arguments begins another. */
    if (slot >= 0 && name.len > 0 && ts__adapter_call_has_args(a, slot)) slot = -1;
  }
  if (ts__adapter_call_ended(a, slot)) slot = -1; /* never reopen: a new call */
  if (slot < 0) return ts__adapter_call_begin(a, index, id, id, name);
  if (id.len > 0) ts__adapter_call_set_key(a, slot, id); /* sent again: replaces */
  return slot;
}

static void tool_call(ts_adapter *a, ts_jv *jv, int tc) {
  if (ts_jv_type_of(jv, tc) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  int64_t index = -1, n;
  if (ts_jv_int(jv, ts_jv_get(jv, tc, "index"), &n) == 0 && n >= 0) index = n;
  int fn = ts_jv_get(jv, tc, "function");
  ts_view id, name;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, tc, "id"), &id) < 0) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, fn, "name"), &name) < 0) return;
  int slot = call_slot(a, index, id, name);
  if (slot < 0) return;
  int args = ts_jv_get(jv, fn, "arguments");
  ts_view text;
  if (ts_jv_type_of(jv, args) == TS_JV_OBJECT) { /* some servers send the object itself */
    ts__adapter_call_args(a, slot, ts_jv_raw(jv, args));
  } else if (ts__adapter_string(a, jv, args, &text) > 0) {
    ts__adapter_call_args(a, slot, text);
  }
}

static void choice(ts_adapter *a, ts_jv *jv, int ch) {
  int64_t n;
  if (ts_jv_int(jv, ts_jv_get(jv, ch, "index"), &n) == 0 && n != 0) return; /* choice 0 only */
  int delta = ts_jv_get(jv, ch, "delta");
  ts_view text;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, delta, "content"), &text) > 0) ts__adapter_text(a, text);
  int calls = ts_jv_get(jv, delta, "tool_calls");
  if (ts_jv_type_of(jv, calls) == TS_JV_ARRAY) {
    int size = ts_jv_size(jv, calls);
    for (int k = 0, tc = ts_jv_first(jv, calls); k < size; k++, tc = ts_jv_skip(jv, tc))
      tool_call(a, jv, tc);
  } else if (calls >= 0 && !ts_jv_is_null(jv, calls)) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
  }
  /* The legacy `function_call` delta: one call, no index, no id. Its token sits where
   * a tool_calls entry's `function` would, so the entry is the delta itself. */
  int legacy = ts_jv_get(jv, delta, "function_call");
  if (ts_jv_type_of(jv, legacy) == TS_JV_OBJECT) {
    int slot = ts__adapter_call_last(a);
    if (slot < 0 || ts__adapter_call_ended(a, slot)) {
      ts_view name, none = {"", 0};
      if (ts__adapter_string(a, jv, ts_jv_get(jv, legacy, "name"), &name) < 0) return;
      slot = ts__adapter_call_begin(a, -1, none, none, name);
      if (slot < 0) return;
    }
    if (ts__adapter_string(a, jv, ts_jv_get(jv, legacy, "arguments"), &text) > 0)
      ts__adapter_call_args(a, slot, text);
  }
  ts_view stop;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, ch, "finish_reason"), &stop) > 0) {
    ts__adapter_end_all(a);
    ts__adapter_set_stop(a, stop);
  }
}

static void chat_event(ts_adapter *a, ts_jv *jv, ts_view event) {
  (void)event;
  if (ts_jv_type_of(jv, 0) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  int err = ts_jv_get(jv, 0, "error");
  if (err >= 0 && !ts_jv_is_null(jv, err)) {
    ts__adapter_provider_error(a, jv, err, NULL);
    return;
  }
  int choices = ts_jv_get(jv, 0, "choices");
  int size = ts_jv_size(jv, choices);
  for (int k = 0, ch = ts_jv_first(jv, choices); k < size; k++, ch = ts_jv_skip(jv, ch))
    choice(a, jv, ch);
  int usage = ts_jv_get(jv, 0, "usage");
  if (ts_jv_type_of(jv, usage) != TS_JV_OBJECT) /* Groq: the counts under x_groq */
    usage = ts_jv_get(jv, ts_jv_get(jv, 0, "x_groq"), "usage");
  if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
}

/* ---- the one-pass reader ------------------------------------------------------------
 * The same reading as chat_event, for a payload of the regular shape, in one pass of the
 * scanner (stream/json_scan.h) instead of a jsmn token array and lookups by name. The
 * pass collects the few values it needs (views into the payload) and changes nothing;
 * only when the whole payload has been read and has the shape this reader knows are they
 * reported, in chat_event's order (per choice: its text, its calls, its finish reason;
 * then usage). Anything else (an error payload, the legacy function_call, a duplicate of
 * a member it reads, a member of an unexpected type, more choices or calls than it has
 * room for, text that is not JSON) returns 0 before anything is reported, and the
 * payload goes the general way, which says what is wrong with it. */

#define FAST_CHOICES 4
#define FAST_CALLS 16

typedef struct {
  int64_t index; /* -1: none */
  ts_json_scan_str id, name, args;
  ts_view args_obj; /* p set: arguments sent as an object */
} fcall;

typedef struct {
  int64_t index; /* 0 unless a plain integer said otherwise */
  ts_json_scan_str content, finish;
  int first_call, n_calls;
} fchoice;

typedef struct {
  ts_json_scan s;
  fchoice ch[FAST_CHOICES];
  fcall calls[FAST_CALLS];
  int n_ch, n_calls;
  ts_view usage;
} fchunk;


/* The members of the object just entered, until its end: `body` for each, which may
 * `return 0` for "not the regular shape"; what it leaves of a container is skipped. The
 * scanner's steps are inline here (json_scan_impl.h). */
#define MEMBERS(c, it, body)                                        \
  for (;;) {                                                        \
    if (ts__json_scan_next_inline(&(c)->s, &(it)) != 1) return 0;   \
    if ((it).type == TS_JSON_SCAN_END) break;                       \
    body                                                            \
    if (ts_json_scan_skip(&(c)->s, NULL) != 1) return 0;            \
  }

/* A member's key against a name, once its length is known to match (the switches below
 * go by length first). */
#define KEY(it, lit) (__builtin_memcmp((it).key.p, (lit), sizeof(lit) - 1) == 0)

static int fast_function(fchunk *c, fcall *fc) {
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  unsigned seen = 0;
  MEMBERS(c, it, {
    if (it.key.len == 4 && KEY(it, "name")) {
      TS__SCAN_ONCE(seen, 1);
      if (!ts_json_scan_take_str(&it, &fc->name)) return 0;
    } else if (it.key.len == 9 && KEY(it, "arguments")) {
      TS__SCAN_ONCE(seen, 2);
      if (it.type == TS_JSON_SCAN_OBJECT) {
        if (ts_json_scan_skip(&c->s, &fc->args_obj) != 1) return 0;
      } else if (!ts_json_scan_take_str(&it, &fc->args)) {
        return 0;
      }
    }
  })
  return 1;
}

static int fast_index(const ts_json_item *it, int64_t *out) {
  int64_t n;
  if (it->type != TS_JSON_SCAN_NUMBER) return 1; /* anything else counts as no index, as ts_jv_int says */
  if (it->raw.len == 1) /* the usual one digit */
    *out = it->raw.p[0] - '0';
  else if (ts_json_scan_int(it->raw, &n) == 0)
    *out = n;
  return 1;
}

static int fast_tool_calls(fchunk *c) {
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  for (;;) {
    if (ts__json_scan_next_inline(&c->s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) return 1;
    if (it.type != TS_JSON_SCAN_OBJECT || c->n_calls == FAST_CALLS) return 0;
    fcall *fc = &c->calls[c->n_calls++];
    fc->id.raw.p = fc->name.raw.p = fc->args.raw.p = fc->args_obj.p = NULL; /* all absent */
    fc->args_obj.len = 0;
    int64_t index = -1;
    unsigned seen = 0;
    MEMBERS(c, it, {
      if (it.key.len == 5 && KEY(it, "index")) {
        TS__SCAN_ONCE(seen, 1);
        fast_index(&it, &index);
      } else if (it.key.len == 2 && KEY(it, "id")) {
        TS__SCAN_ONCE(seen, 2);
        if (!ts_json_scan_take_str(&it, &fc->id)) return 0;
      } else if (it.key.len == 8 && KEY(it, "function")) {
        TS__SCAN_ONCE(seen, 4);
        if (it.type == TS_JSON_SCAN_OBJECT) {
          if (!fast_function(c, fc)) return 0;
        } else if (it.type != TS_JSON_SCAN_NULL) {
          return 0;
        }
      }
    })
    fc->index = index >= 0 ? index : -1;
  }
}

static int fast_delta(fchunk *c, fchoice *ch) {
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  unsigned seen = 0;
  MEMBERS(c, it, {
    if (it.key.len == 10 && KEY(it, "tool_calls")) {
      TS__SCAN_ONCE(seen, 2);
      if (it.type == TS_JSON_SCAN_ARRAY) {
        if (!fast_tool_calls(c)) return 0;
      } else if (it.type != TS_JSON_SCAN_NULL) {
        return 0;
      }
    } else if (it.key.len == 7 && KEY(it, "content")) {
      TS__SCAN_ONCE(seen, 1);
      if (!ts_json_scan_take_str(&it, &ch->content)) return 0;
    } else if (it.key.len == 13 && KEY(it, "function_call")) {
      if (it.type != TS_JSON_SCAN_NULL) return 0; /* the legacy call: the general way */
    }
  })
  return 1;
}

static int fast_choices(fchunk *c) {
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  for (;;) {
    if (ts__json_scan_next_inline(&c->s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) return 1;
    if (it.type != TS_JSON_SCAN_OBJECT || c->n_ch == FAST_CHOICES) return 0;
    fchoice *ch = &c->ch[c->n_ch++];
    ch->index = 0;
    ch->content.raw.p = ch->finish.raw.p = NULL; /* absent */
    ch->first_call = c->n_calls;
    unsigned seen = 0;
    MEMBERS(c, it, {
      if (it.key.len == 5 && KEY(it, "index")) {
        TS__SCAN_ONCE(seen, 1);
        fast_index(&it, &ch->index);
      } else if (it.key.len == 5 && KEY(it, "delta")) {
        TS__SCAN_ONCE(seen, 2);
        if (it.type == TS_JSON_SCAN_OBJECT) {
          if (!fast_delta(c, ch)) return 0;
        } else if (it.type != TS_JSON_SCAN_NULL) {
          return 0;
        }
      } else if (it.key.len == 13 && KEY(it, "finish_reason")) {
        TS__SCAN_ONCE(seen, 4);
        if (!ts_json_scan_take_str(&it, &ch->finish)) return 0;
      }
    })
    ch->n_calls = c->n_calls - ch->first_call;
  }
}

/* Reports a chunk read whole, in chat_event's order. */
static void chat_report(ts_adapter *a, const fchunk *c) {
  for (int k = 0; k < c->n_ch; k++) {
    const fchoice *ch = &c->ch[k];
    if (ch->index != 0) continue; /* choice 0 only */
    ts_view v;
    if (ts__adapter_decode_str(a, &ch->content, &v) > 0) ts__adapter_text(a, v);
    for (int j = ch->first_call; j < ch->first_call + ch->n_calls; j++) {
      const fcall *fc = &c->calls[j];
      ts_view id, nm;
      if (ts__adapter_decode_str(a, &fc->id, &id) < 0) continue;
      if (ts__adapter_decode_str(a, &fc->name, &nm) < 0) continue;
      int slot = call_slot(a, fc->index, id, nm);
      if (slot < 0) continue;
      if (fc->args_obj.p)
        ts__adapter_call_args(a, slot, fc->args_obj);
      else if (ts__adapter_decode_str(a, &fc->args, &v) > 0)
        ts__adapter_call_args(a, slot, v);
    }
    if (ts__adapter_decode_str(a, &ch->finish, &v) > 0) {
      ts__adapter_end_all(a);
      ts__adapter_set_stop(a, v);
    }
  }
  if (c->usage.p) ts__adapter_set_usage(a, c->usage);
}

/* The memo's simple kind (json_shape.h): choice 0 with one call entry that carries only
 * its index (or none) and an argument string: the deltas that are nearly every chunk of
 * a call. Everything else the reading needs is then in the entry's index. */
static int chat_simple(const fchunk *c) {
  const fchoice *ch = &c->ch[0];
  const fcall *fc = &c->calls[0];
  return c->n_ch == 1 && c->n_calls == 1 && !c->usage.p && ch->index == 0 && !ch->content.raw.p &&
         !ch->finish.raw.p && !fc->id.raw.p && !fc->name.raw.p && !fc->args_obj.p && fc->args.raw.p;
}

static __attribute__((noinline)) int chat_full(ts_adapter *a, char *text, size_t len, ts_view name,
                                               ts_json_shape *memo);

static int chat_fast(ts_adapter *a, char *text, size_t len, ts_view name) {
  ts_json_shape *memo = ts__adapter_memo(a);
  ts_json_shape_value v;
  if (memo && ts_json_shape_match_value(memo, text, len, name, &v)) {
    /* P0's reading with this payload's fragment (decoded by the match): chat_report for
     * the simple kind (one call entry with its index and arguments only, in choice 0) */
    ts_view none = {"", 0};
    ts__adapter_call_args_value(a, call_slot(a, memo->nkey, none, none), &v);
    return 1;
  }
  return chat_full(a, text, len, name, memo);
}

/* The full one-pass reading (no memo, or the memo did not match), apart from the memo's
 * path so that a hit pays for none of its registers and locals. */
static int chat_full(ts_adapter *a, char *text, size_t len, ts_view name, ts_json_shape *memo) {
  fchunk c;
  c.n_ch = c.n_calls = 0;
  c.usage = (ts_view){NULL, 0};
  /* `obfuscation`, the one member real streams vary per chunk; after a miss, every
   * member this reader never reads (json_shape.h) */
  ts_json_shape_pass notes;
  ts_json_shape_pass_init(&notes, memo);
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  ts_json_scan_init(&c.s, text, len);
  if (ts__json_scan_next_inline(&c.s, &it) != 1 || it.type != TS_JSON_SCAN_OBJECT) return 0;
  unsigned seen = 0;
  MEMBERS(&c, it, {
    if (it.key.len == 7 && KEY(it, "choices")) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type == TS_JSON_SCAN_ARRAY) {
        if (!fast_choices(&c)) return 0;
      } else if (it.type != TS_JSON_SCAN_NULL) {
        return 0;
      }
    } else if (it.key.len == 5 && KEY(it, "error")) {
      if (it.type != TS_JSON_SCAN_NULL) return 0; /* the provider's error: the general way */
      TS__SCAN_ONCE(seen, 2);
    } else if (it.key.len == 5 && KEY(it, "usage")) {
      TS__SCAN_ONCE(seen, 4);
      if (it.type == TS_JSON_SCAN_OBJECT && ts_json_scan_skip(&c.s, &c.usage) != 1) return 0;
    } else if (it.key.len == 6 && KEY(it, "x_groq")) {
      /* Groq's own object: its last chunk's holds the usage; the general way reads it */
      if (it.type == TS_JSON_SCAN_OBJECT) return 0;
      ts_json_shape_pass_unread(&notes, &it);
    } else if (it.key.len == 11 && KEY(it, "obfuscation")) {
      ts_json_shape_pass_varies(&notes, &it); /* never read, different in every chunk */
    } else {
      ts_json_shape_pass_unread(&notes, &it);
    }
  })
  if (ts__json_scan_next_inline(&c.s, &it) != 0) return 0; /* one value, then only whitespace */
  if (memo) { /* before anything is decoded in place */
    if (chat_simple(&c) &&
        ts_json_shape_keep(memo, text, len, name, ts_json_shape_pass_notes(&notes), c.calls[0].args.raw))
      memo->nkey = c.calls[0].index;
    else
      ts_json_shape_clear(memo);
  }
  chat_report(a, &c);
  return 1;
}

/* `[DONE]`: ends every open call, then the turn. */
static void chat_done(ts_adapter *a) { ts__adapter_turn_end(a); }

static int chat_doc(const ts_jv *jv, int root) {
  return ts_jv_get(jv, root, "choices") >= 0 ||
         ts_jv_eq(jv, ts_jv_get(jv, root, "object"), "chat.completion.chunk");
}

/* ---- the request -------------------------------------------------------------------- */

static void put_message(ts_buf *b, const ts_req_message *m) {
  switch (m->role) {
    case TS_REQ_SYSTEM:
    case TS_REQ_USER:
      ts_buf_puts(b, m->role == TS_REQ_USER ? "{\"role\":\"user\",\"content\":"
                                            : "{\"role\":\"system\",\"content\":");
      ts_buf_append_json_string(b, m->text.p, m->text.len);
      ts_buf_putc(b, '}');
      break;
    case TS_REQ_ASSISTANT:
      ts_buf_puts(b, "{\"role\":\"assistant\",\"content\":");
      if (m->text.len) ts_buf_append_json_string(b, m->text.p, m->text.len);
      else ts_buf_puts(b, "null");
      if (m->ncalls) {
        ts_buf_puts(b, ",\"tool_calls\":[");
        for (size_t i = 0; i < m->ncalls; i++) {
          const ts_req_call *c = &m->calls[i];
          if (i) ts_buf_putc(b, ',');
          ts_buf_puts(b, "{\"id\":");
          ts_buf_append_json_string(b, c->id.p, c->id.len);
          ts_buf_puts(b, ",\"type\":\"function\",\"function\":{\"name\":");
          ts_buf_append_json_string(b, c->name.p, c->name.len);
          ts_buf_puts(b, ",\"arguments\":"); /* the JSON text, as a string */
          ts_buf_append_json_string(b, c->arguments.p, c->arguments.len);
          ts_buf_puts(b, "}}");
        }
        ts_buf_putc(b, ']');
      }
      ts_buf_putc(b, '}');
      break;
    case TS_REQ_TOOL:
      ts_buf_puts(b, "{\"role\":\"tool\",\"tool_call_id\":");
      ts_buf_append_json_string(b, m->call_id.p, m->call_id.len);
      ts_buf_puts(b, ",\"content\":");
      ts__provider_result_text(b, m); /* no error flag: the content says so */
      ts_buf_putc(b, '}');
      break;
  }
}

static int chat_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"model\":");
  ts_buf_append_json_string(b, r->model, strlen(r->model));
  ts_buf_puts(b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[");
  for (size_t i = 0; i < r->nmessages; i++) {
    if (i) ts_buf_putc(b, ',');
    put_message(b, &r->messages[i]);
  }
  ts_buf_putc(b, ']');
  ts__provider_tools(b, r, 1, "parameters");
  ts__provider_tool_choice_openai(b, r);
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const chat_paths[] = {"/chat/completions", NULL};
static const ts_schema_loc chat_schemas[] = {{NULL, "function", {"parameters", NULL}},
                                             {NULL, NULL, {NULL, NULL}}};

/* OpenAI and every server that speaks its Chat Completions (Groq, Mistral, DeepSeek,
 * xAI, Cerebras, OpenRouter, vLLM, Ollama's /v1, llama.cpp). */
const ts_provider ts_provider_openai_chat = {
    .format = TS_FORMAT_OPENAI_CHAT,
    .name = "openai-chat",
    .alias = "openai",
    .detect_doc = chat_doc,
    .sentinel = "[DONE]",
    .event = chat_event,
    .fast_event = chat_fast,
    .on_sentinel = chat_done,
    .eof_after_stop = 1,
    .named_errors = 1,
    .request = chat_request,
    .url_suffix = "/chat/completions",
    .key_env = "OPENAI_API_KEY",
    .auth_header = "Authorization",
    .auth_prefix = "Bearer ",
    .path_suffixes = chat_paths,
    .schemas = chat_schemas,
};
