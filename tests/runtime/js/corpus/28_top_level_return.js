// expect: "early"
const flag = true;
if (flag) return 'early';
return 'late';
