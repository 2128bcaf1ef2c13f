/** Types of scripts/layers.js, which eslint.config.js imports as plain JavaScript. */
export declare const floors: Record<string, string>[];
export declare const featureImports: Record<string, string[]>;
