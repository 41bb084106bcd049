// expect: ["circle",12.57]
type Shape = { kind: 'circle'; r: number } | { kind: 'square'; side: number };
function area(s: Shape): number { return s.kind === 'circle' ? Math.PI * s.r ** 2 : s.side ** 2; }
const c: Shape = { kind: 'circle', r: 2 };
[c.kind, Math.round(area(c) * 100) / 100]
