// expect: [2,[4,5]]
function f(a, b = 2, ...rest) { return [a + b - 1 - 1 + 1, rest]; }
f(1, 2, 4, 5)
