// expect: ["007","ab--","hahaha",true,"a_b_c"]
['7'.padStart(3, '0'), 'ab'.padEnd(4, '-'), 'ha'.repeat(3), 'hello world'.includes('o w'), 'a b c'.replaceAll(' ', '_')]
