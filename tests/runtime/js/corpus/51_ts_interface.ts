// expect: "Ada (36)"
interface User { name: string; age: number; email?: string }
function describe(u: User): string { return `${u.name} (${u.age})`; }
const u: User = { name: 'Ada', age: 36 };
describe(u)
