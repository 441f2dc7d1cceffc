// One lint setup for the repo, run in CI (`npm run lint`): typescript-eslint with type
// information (floating promises are errors) and the layering of STYLE.md as import rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const layer = (patterns, message) => ({
  'no-restricted-imports': ['error', { patterns: [{ group: patterns, message }] }],
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/generated/**', 'data/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['test', 'it', 'describe', 'suite'], package: 'node:test' },
          ],
        },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-console': 'error',
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: layer(
      ['../common/*', '../coordinator/*', '../probe/*', '../facade/*', '../delivery/*', '../cli/*'],
      'domain is pure: it imports nothing of Vigil but domain',
    ),
  },
  {
    files: ['src/facade/**/*.ts'],
    rules: layer(
      [
        '../coordinator/*',
        '../../coordinator/*',
        '../probe/*',
        '../../probe/*',
        '../delivery/*',
        '../../delivery/*',
      ],
      'the facade talks to the coordinator only through common/service.ts',
    ),
  },
  {
    files: ['src/probe/**/*.ts', 'workers/**/*.ts'],
    rules: layer(
      [
        '../coordinator/*',
        '../../coordinator/*',
        '../facade/*',
        '../../facade/*',
        '../delivery/*',
        '../../delivery/*',
        '../src/probe/*',
        '../src/coordinator/*',
        '../src/facade/*',
        '../src/common/*',
        '../../src/*',
      ],
      'probe code never imports coordinator or facade code',
    ),
  },
  {
    files: ['src/coordinator/**/*.ts'],
    rules: layer(
      ['../probe/*', '../../probe/*', '../facade/*', '../../facade/*'],
      'the coordinator never imports probe or facade code',
    ),
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'src/main.ts', 'src/cli/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
);
