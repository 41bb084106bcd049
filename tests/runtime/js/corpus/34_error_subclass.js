// expect: ["ValidationError","bad input",true,true]
class ValidationError extends Error {
  constructor(message) { super(message); this.name = 'ValidationError'; }
}
const e = new ValidationError('bad input');
[e.name, e.message, e instanceof ValidationError, e instanceof Error]
