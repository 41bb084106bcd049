// expect: "two"
function name(n) {
  switch (n) {
    case 1: { const s = 'one'; return s; }
    case 2: { const s = 'two'; return s; }
    default: return 'many';
  }
}
name(2)
