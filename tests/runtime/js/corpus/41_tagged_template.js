// expect: "a[1]b[2]c"
function tag(strs, ...vals) { return strs.reduce((out, s, i) => out + s + (i < vals.length ? `[${vals[i]}]` : ''), ''); }
tag`a${1}b${2}c`
