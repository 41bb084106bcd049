// expect: [1024,9]
let p = 2;
p **= 10;
let q = 3;
q *= 3;
[p, q]
