// expect: 4
const m = new Map<string, number[]>();
m.set('k', [1, 2, 3, 4]);
m.get('k')!.length
