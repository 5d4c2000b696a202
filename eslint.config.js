import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The dependency rule (README, "Layout"): http → ingest, query, admin → domain, storage;
// jobs and the CLI beside http; domain imports nothing of ours. Each layer lists what it may not
// import; test/lint-layers.test.ts proves the rule bites.
const LAYERS = {
  domain: ['../*', '../**'],
  storage: ['**/http/**', '**/ingest/**', '**/query/**', '**/admin/**', '**/jobs/**', '**/cli/**', '**/app.js', '**/server.js'],
  ingest: ['**/http/**', '**/query/**', '**/admin/**', '**/jobs/**', '**/cli/**', '**/app.js', '**/server.js'],
  query: ['**/http/**', '**/ingest/**', '**/admin/**', '**/jobs/**', '**/cli/**', '**/app.js', '**/server.js'],
  admin: ['**/http/**', '**/ingest/**', '**/query/**', '**/jobs/**', '**/cli/**', '**/app.js', '**/server.js'],
  jobs: ['**/http/**', '**/ingest/**', '**/query/**', '**/admin/**', '**/cli/**', '**/app.js', '**/server.js'],
  http: ['**/jobs/**', '**/cli/**', '**/server.js'],
};

const layerRules = Object.entries(LAYERS).map(([layer, forbidden]) => ({
  files: [`src/${layer}/**/*.ts`, `src/${layer}/**/*.mjs`],
  rules: {
    'no-restricted-imports': ['error', { patterns: [{ group: forbidden, message: `${layer} may not import this layer (the dependency rule in README.md)` }] }],
  },
}));

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'client/dist/', 'console/dist/', '.tmp/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-console': 'off',
    },
  },
  ...layerRules,
);
