// expect: "Ada Lovelace"
function fullName({ first, last = 'Lovelace' }) { return `${first} ${last}`; }
fullName({ first: 'Ada' })
