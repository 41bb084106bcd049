// expect: [1,2]
let found = null;
outer: for (const i of [1, 2, 3]) {
  for (const j of [1, 2, 3]) {
    if (i + j === 3) { found = [i, j]; break outer; }
  }
}
found
