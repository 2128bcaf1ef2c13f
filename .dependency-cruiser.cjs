/**
 * Import cycles, type-only imports included (ESLint's import-x/no-cycle skips those): `npm run lint`
 * runs this over every source folder. The layers themselves are ESLint zones (eslint.config.js);
 * test/contract/boundaries.test.ts shows each rule failing on a fixture.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'A module imports itself through others. Break the loop: move what both need one floor down (docs/ARCHITECTURE.md).',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', 'cdk\\.out', '\\.local-data', 'packages/[^/]+/dist'] },
    // Type-only imports are dependencies too: a cycle held together by `import type` is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.json'] },
  },
};
