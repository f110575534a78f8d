// Lint: ESLint's and typescript-eslint's recommended rules, plus the few type-aware rules that
// catch real async bugs (an un-awaited append or ack is lost silently). Only those rules need
// type information, so the run stays well under a minute on two cores.
// Architecture boundaries are dependency-cruiser's job (.dependency-cruiser.cjs), not ESLint's.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** Globals of plain Node scripts and config files (the `globals` package is not worth a dependency). */
const nodeGlobals = Object.fromEntries(
  ['process', 'console', 'Buffer', 'URL', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate']
    .map((name) => [name, 'readonly']),
);
const commonJsGlobals = { module: 'writable', require: 'readonly', __dirname: 'readonly', __filename: 'readonly' };

export default defineConfig(
  globalIgnores([
    'dist/',
    'coverage/',
    '.gpunet/',
    'contracts/generated/',
    // Deliberately bad code that proves the boundary check fails (see its README).
    'test/architecture/fixtures/',
  ]),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise nobody awaits loses its error: an append, publish or ack that silently fails.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // Errors carry a name, a stack and a `cause`; throwing strings or plain objects loses them.
      '@typescript-eslint/only-throw-error': 'error',
      // `if (promise)` and spreading a promise are always bugs; async callbacks handed to event
      // emitters and Nest hooks are common and deliberate, so void-return checks stay off.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Framework seams (Nest transports, JSON payloads) sometimes need `any`; keep rest args free.
      '@typescript-eslint/no-explicit-any': ['error', { ignoreRestArgs: true }],
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: { globals: nodeGlobals },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { ...nodeGlobals, ...commonJsGlobals } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
