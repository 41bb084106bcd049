// expect: {"ok":true,"n":3}
const text = JSON.stringify({ ok: true, items: [1, 2, 3] });
const { ok, items } = JSON.parse(text);
({ ok, n: items.length })
