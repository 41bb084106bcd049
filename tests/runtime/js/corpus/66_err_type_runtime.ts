// expect-error: TypeError
const user: { name?: { first: string } } = {};
user.name.first
