// expect: [1,2]
let x = 1;
{
  let x = 2;
  var inner = x;
}
[x, inner]
