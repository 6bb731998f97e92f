// ESLint: typescript-eslint's strict, type-checked rules over all TypeScript of the repository; formatting is
// Prettier's (eslint-config-prettier turns off the rules that would fight it). Where a rule is relaxed, the
// comment says why.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'build/**/*.mjs', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's test()/describe() return promises the runner awaits itself.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      // Numbers and bigints print as they should in messages; objects, nullish values and unknowns do not.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `(msg) => write(msg)`, and `return done()` in a function that returns void: the idioms of the callbacks here.
      // An async function without an await still turns a throw into a rejection, which callers of the Store seam
      // and the verbs rely on (a synchronous throw would escape their .catch()).
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true, ignoreVoidReturningFunctions: true }],
    },
  },
  {
    files: ['test/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      // A test asserts a value's presence first and then reads it; `!` says so without another branch.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  prettier,
);
