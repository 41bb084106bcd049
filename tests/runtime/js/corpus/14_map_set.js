// expect: {"unique":3,"counts":[["a",2],["b",1],["c",1]]}
const words = ['a', 'b', 'a', 'c'];
const counts = new Map();
for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
({ unique: new Set(words).size, counts: [...counts] })
