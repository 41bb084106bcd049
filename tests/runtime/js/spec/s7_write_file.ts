defineTool({
description: 'Write a file to the workspace',
progressArgument: 'description',
args: z.object({
description: z.string().describe('e.g. "writing index.html"'),
path: z.string(),
content: z.string(),
}),
execute: async (state, args) => {
return { status: 'success', result: '...' };
},
});
