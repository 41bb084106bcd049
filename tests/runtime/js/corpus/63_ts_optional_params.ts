// expect: ["Hello, World","Hi, Ada"]
function greet(name?: string, greeting: string = 'Hello'): string { return `${greeting}, ${name ?? 'World'}`; }
[greet(), greet('Ada', 'Hi')]
