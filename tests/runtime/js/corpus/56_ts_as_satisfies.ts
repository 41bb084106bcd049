// expect: [5,"cfg"]
const raw: unknown = '12345';
const len = (raw as string).length;
const config = { name: 'cfg', retries: 3 } satisfies Record<string, string | number>;
[len, config.name]
