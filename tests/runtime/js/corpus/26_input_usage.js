// expect: "no input"
typeof input === 'undefined' ? 'no input' : input
