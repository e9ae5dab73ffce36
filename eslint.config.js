// Lint: typescript-eslint's recommended rules plus the module boundaries of
// docs/architecture.md §4 (scripts/eslint/boundaries.js).
import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';
import { fileURLToPath } from 'node:url';
import { boundaries } from './scripts/eslint/boundaries.js';
import globals from 'globals';

const vendors = readdirSync(new URL('./src/ai/providers/', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

const DATA_PLANES = ['./src/ai', './src/passthrough', './src/apigw'];

const zones = [
  { target: './src/lib', from: './src', except: ['./lib'], message: 'lib/ may import only node built-ins.' },
  {
    target: ['./src/resources', './src/config'],
    from: [...DATA_PLANES, './src/http', './src/store', './src/admin', './src/snapshot', './src/sources', './src/cli'],
    message: 'resources/ and config/ may import only lib/ and schema/YAML libraries.',
  },
  { target: './src/ai/protocols', from: './src', except: ['./lib', './ai/protocols'], message: 'ai/protocols/ may import only lib/.' },
  {
    target: './src/ai/providers',
    from: './src',
    except: ['./lib', './ai/protocols', './ai/providers'],
    message: 'adapters are pure translation: only ai/protocols/ and lib/.',
  },
  ...vendors.map((v) => ({
    target: `./src/ai/providers/${v}`,
    from: vendors.filter((o) => o !== v).map((o) => `./src/ai/providers/${o}`),
    message: 'an adapter must not import another vendor.',
  })),
  {
    target: ['./src/snapshot', './src/sources'],
    from: ['./src/store', './src/admin', './src/http', ...DATA_PLANES.filter((d) => d !== './src/ai'), './src/ai/dispatch', './src/ai/endpoints'],
    message: 'snapshot/ and sources/ may import resources/, registries and lib/ only.',
  },
  {
    target: './src/http',
    from: './src',
    except: ['./lib', './observability', './http'],
    message: 'http/ may import lib/ and observability/ only; data planes plug into it.',
  },
  { target: DATA_PLANES, from: ['./src/store', './src/admin'], message: 'data planes never import store/ or admin/.' },
  {
    target: ['./src/admin', './src/store'],
    from: [...DATA_PLANES, './src/http', './src/snapshot'],
    message: 'admin/ and store/ never import data-plane modules.',
  },
];

// An ES import of node:http loads Node's bundled undici (~9 MiB): src/http/node-http.ts says why.
const nodeHttpImports = ['node:http', 'http'].map((name) => ({
  name,
  allowTypeImports: true,
  message: 'import { http } from src/http/node-http.ts instead (an ES import of node:http loads Node\'s bundled undici).',
}));

export default tseslint.config(
  { ignores: ['node_modules/**', 'schemas/**', 'bench/results/**'] },
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    plugins: { tollgate: { rules: { boundaries } } },
    rules: {
      'tollgate/boundaries': ['error', { root: fileURLToPath(new URL('.', import.meta.url)), zones }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['src/**'],
    ignores: ['src/**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: nodeHttpImports }] },
  },
  {
    files: ['src/ai/**', 'src/passthrough/**', 'src/apigw/**'],
    ignores: ['src/**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [...nodeHttpImports, { name: 'fastify', message: 'data planes use the raw node:http hot path.' }] }] },
  },
  {
    files: ['**/*.test.ts', 'test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
