// toolstream's live page: follows one thread's events over SSE (GET /threads/ID/events),
// which resumes by itself after a reconnect (the browser sends Last-Event-ID; the server
// continues after it). Plain JavaScript, no build step. Every event is applied once, in
// seq order; anything at or below the last seq applied is a duplicate and ignored.
"use strict";
(function () {
  const params = new URLSearchParams(location.search);
  const token = params.get("token");
  const $ = (id) => document.getElementById(id);
  const state = { es: null, thread: null, lastSeq: 0, turn: 1, turnOpen: false, calls: new Map(), text: null };
  window.__toolstream = { events: [], labelShownAt: {} }; // read by the browser tests

  function withToken(url) {
    return token ? url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : url;
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function announce(msg) { const a = el("p", null, msg); $("announce").append(a); while ($("announce").childNodes.length > 5) $("announce").firstChild.remove(); }
  function ms(us) { return (us / 1000).toFixed(us < 10000 ? 2 : 0) + " ms"; }
  function now(ev) { return typeof ev.mono_us === "number" ? ev.mono_us : Math.round(performance.now() * 1000); }

  function loadThreads() {
    fetch(withToken("/threads")).then((r) => (r.ok ? r.json() : null)).then((list) => {
      if (!list || !Array.isArray(list.threads)) return;
      const byParent = new Map();
      for (const t of list.threads) {
        const p = t.parent || "";
        if (!byParent.has(p)) byParent.set(p, []);
        byParent.get(p).push(t);
      }
      const render = (parent) => {
        const ul = el("ul");
        for (const t of byParent.get(parent) || []) {
          const li = el("li");
          const a = el("a", null, t.id);
          a.href = "?thread=" + encodeURIComponent(t.id) + (token ? "&token=" + encodeURIComponent(token) : "");
          if (t.id === state.thread) a.setAttribute("aria-current", "true");
          li.append(a);
          const tag = (t.tags || []).find((g) => typeof g === "string" && g.startsWith("name:"));
          if (tag) li.append(el("span", "name", " (" + tag.slice(5) + ")")); // a subagent's name
          if (byParent.has(t.id)) li.append(render(t.id));
          ul.append(li);
        }
        return ul;
      };
      $("threads").replaceWith(Object.assign(render(""), { id: "threads" }));
    }).catch(() => {});
  }

  function turnLine() {
    const li = el("li", "turn", "turn " + state.turn);
    li.dataset.turn = String(state.turn);
    $("timeline").append(li);
  }
  function beginTapEvent() {
    if (!state.turnOpen) { state.turnOpen = true; turnLine(); }
  }
  // A call is keyed by its turn and index. Events carry `turn`; a turn's results may come
  // before or after its turn_finished (the calls run while the reply still streams), so
  // the page's own turn counter is only a fallback for events without one.
  function callKey(ev) { return (typeof ev.turn === "number" ? ev.turn : state.turn) + ":" + ev.index; }

  function newCall(ev) {
    const li = el("li");
    const d = el("details", "call");
    d.dataset.callId = ev.call_id || "";
    d.dataset.state = "started";
    const s = el("summary");
    const spin = el("span", "spinner");
    spin.setAttribute("aria-hidden", "true");
    const tool = el("span", "tool", ev.tool);
    const label = el("span", "label", ev.progress || "");
    const meta = el("span", "meta", "");
    s.append(spin, tool, label, meta);
    const args = el("pre", "args");
    args.setAttribute("aria-label", "arguments");
    const result = el("pre", "result");
    result.hidden = true;
    d.append(s, args, result);
    li.append(d);
    $("timeline").append(li);
    const c = { d, label, meta, args, result, started: now(ev), startedOffset: ev.offset, bytes: 0, preview: "" };
    state.calls.set(callKey(ev), c);
    return c;
  }
  function meta(c) {
    const parts = [];
    if (c.bytes) parts.push(c.bytes + " bytes");
    if (c.lead !== undefined) parts.push("label " + ms(c.lead) + " before the arguments");
    if (c.duration !== undefined) parts.push("ran " + c.duration.toFixed(1) + " ms");
    c.meta.textContent = parts.join(" · ");
  }

  function apply(ev) {
    switch (ev.type) {
      case "text_delta": {
        beginTapEvent();
        if (!state.text) { state.text = el("li", "text"); $("timeline").append(state.text); }
        state.text.textContent += ev.text;
        break;
      }
      case "tool_call_started": {
        beginTapEvent();
        state.text = null;
        const c = newCall(ev);
        if (ev.progress) window.__toolstream.labelShownAt[ev.call_id || callKey(ev)] = performance.now();
        announce(ev.tool + (ev.progress ? ": " + ev.progress : "") + " started");
        meta(c);
        break;
      }
      case "tool_call_delta": {
        const c = state.calls.get(callKey(ev));
        if (c && c.preview.length < 4000) { c.preview += ev.delta; c.args.textContent = c.preview; }
        break;
      }
      case "tool_call_heartbeat": {
        const c = state.calls.get(callKey(ev));
        if (c) { c.bytes = ev.bytes; meta(c); }
        break;
      }
      case "tool_call_ready": {
        const c = state.calls.get(callKey(ev));
        if (!c) break;
        const text = JSON.stringify(ev.arguments, null, 2);
        c.args.textContent = text.length > 4000 ? text.slice(0, 4000) + "…" : text;
        c.bytes = JSON.stringify(ev.arguments).length;
        if (c.label.textContent) c.lead = now(ev) - c.started;
        c.d.dataset.state = "ready";
        meta(c);
        break;
      }
      case "tool_call_error": {
        const c = state.calls.get(callKey(ev)) || newCall(ev);
        c.d.dataset.state = "error";
        c.d.classList.add("error", "done");
        c.result.hidden = false;
        c.result.classList.add("error-text");
        c.result.textContent = ev.code + ": " + ev.error;
        break;
      }
      case "tool_result": {
        const c = state.calls.get(callKey(ev));
        if (!c) break;
        c.d.classList.add("done", ev.is_error ? "error" : "ok");
        c.d.dataset.state = ev.is_error ? "failed" : "done";
        c.duration = ev.duration_ms;
        c.result.hidden = false;
        c.result.classList.toggle("error-text", !!ev.is_error);
        c.result.textContent = ev.is_error ? ev.error : JSON.stringify(ev.result, null, 2);
        announce(ev.tool + (ev.is_error ? " failed" : " finished"));
        meta(c);
        break;
      }
      case "turn_finished": {
        beginTapEvent();
        state.text = null;
        state.turnOpen = false;
        state.turn++;
        for (const c of state.calls.values())
          if (c.d.dataset.state === "ready") c.d.classList.add("done-pending");
        break;
      }
      case "stream_error": {
        const li = el("li", "text error-text", "stream error: " + ev.code + ": " + ev.error);
        $("timeline").append(li);
        break;
      }
      default:
        break;
    }
  }

  function follow(thread) {
    if (state.es) state.es.close();
    Object.assign(state, { thread, lastSeq: 0, turn: 1, turnOpen: false, calls: new Map(), text: null });
    $("timeline").replaceChildren();
    $("thread-title").textContent = thread;
    $("thread-input").value = thread;
    const es = new EventSource(withToken("/threads/" + encodeURIComponent(thread) + "/events"));
    state.es = es;
    es.onopen = () => { $("status").textContent = "Live."; };
    es.onerror = () => { $("status").textContent = "Reconnecting…"; };
    es.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      if (typeof ev.seq !== "number" || ev.seq <= state.lastSeq) return; // a duplicate
      state.lastSeq = ev.seq;
      window.__toolstream.events.push(ev);
      apply(ev);
    };
    loadThreads();
  }

  $("pick").addEventListener("submit", (e) => {
    e.preventDefault();
    const t = $("thread-input").value.trim();
    if (!t) return;
    const u = new URL(location.href);
    u.searchParams.set("thread", t);
    history.replaceState(null, "", u);
    follow(t);
  });
  const initial = params.get("thread");
  if (initial) follow(initial); else loadThreads();
})();
