// expect: [null,"deep",null]
const a = { b: { c: 'deep' } };
const none = null;
[none?.b?.c ?? null, a?.b?.c, a.x?.y ?? null]
