// Lint configuration: typescript-eslint's recommended rules over all TypeScript sources, and the
// layer rules of docs/architecture.md: libraries never import cells or commands, the generic BPF
// layer never imports Cellium's maps or datapath, and a cell imports another cell only through
// its index.ts or types.ts.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bpf-loader-native/build/**', '.tap/**', 'api/generated/**', 'build/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['src/{lib,bpf,maps,datapath,monitor,netlink,cni,api,hive}/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '(^|/)(cells|cmd|cli)(/|\\.js$)', message: 'a library imports no cell, command or CLI: move what both need below the cells (src/lib, src/datapath, src/maps)' }],
      }],
    },
  },
  {
    files: ['src/bpf/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '(^|/)(cells|cmd|cli|maps|datapath|monitor)(/|\\.js$)', message: "src/bpf is the generic libbpf layer: Cellium's maps live in src/maps, the datapath model in src/datapath" }],
      }],
    },
  },
  {
    files: ['src/cells/*/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '^\\.\\./[^./][^/]*/(?!(index|types)\\.js$)', message: "import another cell through its index.ts or types.ts only (re-export what it offers there)" }],
      }],
    },
  },
  {
    files: ['src/cells/*/*/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '^\\.\\./\\.\\./[^./][^/]*/(?!(index|types)\\.js$)', message: "import another cell through its index.ts or types.ts only (re-export what it offers there)" }],
      }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
  },
);
