// expect: ["h","é","😀"]
const chars = [];
for (const ch of 'hé😀') chars.push(ch);
chars
