// expect: [4,16]
const xs = [1, 2, 3, 4];
xs.filter(x => x % 2 === 0).map(x => x ** 2)
