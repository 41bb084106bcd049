defineTool({
description: 'Run a TypeScript module in a sandbox',
args: z.object({ code: z.string() }),
annotations: {
agentbuilder: { codemode: { codeArgument: 'code', language: 'typescript' } },
},
execute: async (state, args) => {
return { status: 'success', result: '...' };
},
});
