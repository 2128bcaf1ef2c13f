/** Types of scripts/layers.js, which eslint.config.js imports as plain JavaScript. */
export declare const floors: Record<string, string>[];
export declare const featureImports: Record<string, string[]>;
/** Below lib/'s floors: the workspace packages lib/ and the SDK import by name, with what each holds. */
export declare const packageFloor: Record<string, string>;
