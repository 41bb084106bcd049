// expect: [0,2,4,6]
Array.from({ length: 4 }, (_, i) => i * 2)
