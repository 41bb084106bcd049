// expect: {"even":[2,4],"odd":[1,3]}
const groups = [1, 2, 3, 4].reduce((acc, n) => {
  const k = n % 2 ? 'odd' : 'even';
  (acc[k] ||= []).push(n);
  return acc;
}, {});
({ even: groups.even, odd: groups.odd })
