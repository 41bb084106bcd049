type ToolAnnotations = Record<string, unknown>;
