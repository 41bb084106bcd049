/*
 * conversation.c: see conversation.h. The thread's messages are read once into memory
 * (a conversation is small next to the bytes a model streams), then written out in
 * provider order.
 */
#include "agent/conversation.h"

#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "stream/adapter.h"

typedef struct {
  int role;
  char *content;
  size_t len;
  char *call_id;
  int is_error;
  int used;
} msg;

typedef struct {
  msg *v;
  size_t n, cap;
  int oom;
} msgs;

static int collect(void *user, const ts_store_message *m) {
  msgs *l = user;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 32;
    msg *v = realloc(l->v, cap * sizeof *v);
    if (!v) return l->oom = 1;
    l->v = v;
    l->cap = cap;
  }
  msg *x = &l->v[l->n];
  memset(x, 0, sizeof *x);
  x->role = m->role;
  x->content = malloc(m->content_len + 1);
  x->call_id = strdup(m->tool_call_id ? m->tool_call_id : "");
  if (!x->content || !x->call_id) {
    free(x->content);
    free(x->call_id);
    return l->oom = 1;
  }
  memcpy(x->content, m->content, m->content_len);
  x->content[m->content_len] = '\0';
  x->len = m->content_len;
  x->is_error = m->is_error;
  l->n++;
  return 0;
}

/* The result message for call `id` not yet used, or NULL. */
static msg *result_for(msgs *l, const char *id, size_t idlen) {
  for (size_t i = 0; i < l->n; i++) {
    msg *m = &l->v[i];
    if (m->role == TS_STORE_TOOL && !m->used && strlen(m->call_id) == idlen &&
        !memcmp(m->call_id, id, idlen))
      return m;
  }
  return NULL;
}

static void put_tools(ts_buf *b, const ts_registry *reg, ts_provider p) {
  size_t n = ts_registry_count(reg);
  if (!n) return;
  ts_buf_puts(b, ",\"tools\":[");
  for (size_t i = 0; i < n; i++) {
    const ts_tool *t = ts_registry_at(reg, i);
    const char *schema = ts_tool_args_schema(t);
    if (!schema) schema = "{\"type\":\"object\"}";
    if (i) ts_buf_putc(b, ',');
    if (p == TS_PROVIDER_OPENAI) ts_buf_puts(b, "{\"type\":\"function\",\"function\":");
    ts_buf_puts(b, "{\"name\":");
    ts_buf_append_json_string(b, ts_tool_name(t), strlen(ts_tool_name(t)));
    ts_buf_puts(b, ",\"description\":");
    ts_buf_append_json_string(b, ts_tool_description(t), strlen(ts_tool_description(t)));
    ts_buf_puts(b, p == TS_PROVIDER_OPENAI ? ",\"parameters\":" : ",\"input_schema\":");
    ts_buf_append_json_compact(b, schema, strlen(schema));
    ts_buf_puts(b, p == TS_PROVIDER_OPENAI ? "}}" : "}");
  }
  ts_buf_putc(b, ']');
}

/* One assistant message and the results of its calls. */
static void put_turn(ts_buf *b, msgs *l, msg *a, ts_provider p, int *first) {
  char *js = malloc(a->len + 1);
  ts_jv v;
  memset(&v, 0, sizeof v);
  if (!js || ts_jv_init(&v, (int)(a->len / 2 + 16)) != TS_E_OK) {
    free(js);
    b->err = TS_E_NOMEM;
    return;
  }
  memcpy(js, a->content, a->len + 1);
  if (ts_jv_parse(&v, js, a->len) != TS_E_OK) { /* not ours: send it as plain text */
    ts_buf_puts(b, *first ? "" : ",");
    ts_buf_puts(b, "{\"role\":\"assistant\",\"content\":");
    ts_buf_append_json_string(b, a->content, a->len);
    ts_buf_putc(b, '}');
    *first = 0;
    goto out;
  }
  /* raw views first: decoding strings in place would spoil them */
  int calls = ts_jv_get(&v, 0, "tool_calls");
  int ncalls = ts_jv_type_of(&v, calls) == TS_JV_ARRAY ? ts_jv_size(&v, calls) : 0;
  ts_view text = {"", 0};
  int ti = ts_jv_get(&v, 0, "text");
  /* keep only calls that have a result */
  int has[TS_ADAPTER_MAX_CALLS];
  ts_view ids[TS_ADAPTER_MAX_CALLS], names[TS_ADAPTER_MAX_CALLS], args[TS_ADAPTER_MAX_CALLS];
  int k = 0;
  for (int c = 0, e = ts_jv_first(&v, calls); c < ncalls && k < TS_ADAPTER_MAX_CALLS;
       c++, e = ts_jv_skip(&v, e), k++) {
    args[k] = ts_jv_raw(&v, ts_jv_get(&v, e, "arguments"));
    if (ts_jv_is_null(&v, ts_jv_get(&v, e, "arguments")) || !args[k].len) args[k] = (ts_view){"{}", 2};
    ids[k] = (ts_view){"", 0};
    names[k] = (ts_view){"", 0};
  }
  k = 0;
  for (int c = 0, e = ts_jv_first(&v, calls); c < ncalls && k < TS_ADAPTER_MAX_CALLS;
       c++, e = ts_jv_skip(&v, e), k++) {
    ts_jv_str(&v, ts_jv_get(&v, e, "id"), &ids[k]);
    ts_jv_str(&v, ts_jv_get(&v, e, "name"), &names[k]);
  }
  if (ti >= 0) ts_jv_str(&v, ti, &text);
  int kept = 0;
  for (int i = 0; i < k; i++) kept += (has[i] = result_for(l, ids[i].p, ids[i].len) != NULL);

  ts_buf_puts(b, *first ? "" : ",");
  *first = 0;
  if (p == TS_PROVIDER_OPENAI) {
    ts_buf_puts(b, "{\"role\":\"assistant\",\"content\":");
    if (text.len) ts_buf_append_json_string(b, text.p, text.len);
    else ts_buf_puts(b, "null");
    if (kept) {
      ts_buf_puts(b, ",\"tool_calls\":[");
      int w = 0;
      for (int i = 0; i < k; i++) {
        if (!has[i]) continue;
        if (w++) ts_buf_putc(b, ',');
        ts_buf_puts(b, "{\"id\":");
        ts_buf_append_json_string(b, ids[i].p, ids[i].len);
        ts_buf_puts(b, ",\"type\":\"function\",\"function\":{\"name\":");
        ts_buf_append_json_string(b, names[i].p, names[i].len);
        ts_buf_puts(b, ",\"arguments\":");
        ts_buf_append_json_string(b, args[i].p, args[i].len);
        ts_buf_puts(b, "}}");
      }
      ts_buf_putc(b, ']');
    }
    ts_buf_putc(b, '}');
    for (int i = 0; i < k; i++) {
      if (!has[i]) continue;
      msg *r = result_for(l, ids[i].p, ids[i].len);
      r->used = 1;
      ts_buf_puts(b, ",{\"role\":\"tool\",\"tool_call_id\":");
      ts_buf_append_json_string(b, ids[i].p, ids[i].len);
      ts_buf_puts(b, ",\"content\":");
      if (r->is_error) {
        ts_buf b2;
        ts_buf_init(&b2, r->len + 16);
        ts_buf_puts(&b2, "Error: ");
        ts_buf_append(&b2, r->content, r->len);
        ts_buf_append_json_string(b, b2.p ? b2.p : "", b2.len);
        ts_buf_fini(&b2);
      } else {
        ts_buf_append_json_string(b, r->content, r->len);
      }
      ts_buf_putc(b, '}');
    }
  } else {
    ts_buf_puts(b, "{\"role\":\"assistant\",\"content\":[");
    int w = 0;
    if (text.len) {
      ts_buf_puts(b, "{\"type\":\"text\",\"text\":");
      ts_buf_append_json_string(b, text.p, text.len);
      ts_buf_putc(b, '}');
      w++;
    }
    for (int i = 0; i < k; i++) {
      if (!has[i]) continue;
      if (w++) ts_buf_putc(b, ',');
      ts_buf_puts(b, "{\"type\":\"tool_use\",\"id\":");
      ts_buf_append_json_string(b, ids[i].p, ids[i].len);
      ts_buf_puts(b, ",\"name\":");
      ts_buf_append_json_string(b, names[i].p, names[i].len);
      ts_buf_puts(b, ",\"input\":");
      ts_buf_append(b, args[i].p, args[i].len);
      ts_buf_putc(b, '}');
    }
    if (!w) ts_buf_puts(b, "{\"type\":\"text\",\"text\":\"(no text)\"}");
    ts_buf_puts(b, "]}");
    if (kept) {
      ts_buf_puts(b, ",{\"role\":\"user\",\"content\":[");
      int u = 0;
      for (int i = 0; i < k; i++) {
        if (!has[i]) continue;
        msg *r = result_for(l, ids[i].p, ids[i].len);
        r->used = 1;
        if (u++) ts_buf_putc(b, ',');
        ts_buf_puts(b, "{\"type\":\"tool_result\",\"tool_use_id\":");
        ts_buf_append_json_string(b, ids[i].p, ids[i].len);
        ts_buf_puts(b, ",\"content\":");
        ts_buf_append_json_string(b, r->content, r->len);
        ts_buf_puts(b, r->is_error ? ",\"is_error\":true}" : "}");
      }
      ts_buf_puts(b, "]}");
    }
  }
out:
  ts_jv_fini(&v);
  free(js);
}

int ts_conversation_request(ts_store *s, const char *thread, const ts_registry *reg,
                            ts_provider provider, const char *model, unsigned max_tokens,
                            ts_buf *out) {
  msgs l = {0};
  int rc = ts_store_messages(s, thread, 0, collect, &l);
  if (l.oom) rc = TS_E_NOMEM;
  if (rc >= 0) {
    rc = TS_E_OK;
    ts_buf_puts(out, "{\"model\":");
    ts_buf_append_json_string(out, model, strlen(model));
    if (provider == TS_PROVIDER_ANTHROPIC) {
      ts_buf_puts(out, ",\"max_tokens\":");
      ts_buf_append_u64(out, max_tokens ? max_tokens : 4096);
      ts_buf_puts(out, ",\"stream\":true");
    } else {
      ts_buf_puts(out, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    }
    ts_buf_puts(out, ",\"messages\":[");
    int first = 1;
    for (size_t i = 0; i < l.n; i++) {
      msg *m = &l.v[i];
      if (m->role == TS_STORE_USER || m->role == TS_STORE_SYSTEM) {
        if (m->role == TS_STORE_SYSTEM && provider == TS_PROVIDER_ANTHROPIC) continue;
        ts_buf_puts(out, first ? "" : ",");
        first = 0;
        ts_buf_puts(out, m->role == TS_STORE_USER ? "{\"role\":\"user\",\"content\":"
                                                  : "{\"role\":\"system\",\"content\":");
        ts_buf_append_json_string(out, m->content, m->len);
        ts_buf_putc(out, '}');
      } else if (m->role == TS_STORE_ASSISTANT) {
        put_turn(out, &l, m, provider, &first);
      }
    }
    ts_buf_putc(out, ']');
    put_tools(out, reg, provider);
    ts_buf_putc(out, '}');
    if (out->err) rc = out->err;
  }
  for (size_t i = 0; i < l.n; i++) {
    free(l.v[i].content);
    free(l.v[i].call_id);
  }
  free(l.v);
  return rc;
}
