// Lint configuration: typescript-eslint's recommended rules over all TypeScript sources, and the
// layer rules of docs/architecture.md: libraries never import cells or commands (and src/lib not
// the hive either), the CLI imports no cell, the generic BPF layer never imports Cellium's maps or datapath, the datapath
// contract (src/datapath/*.ts) never imports its implementations or a map, a cell imports another
// cell only through its index.ts or types.ts, and no cell but the datapath's own imports a
// datapath implementation (datapath-bpf, datapath-memory): the others use the contract.
// (A rule applies per file: a later block that matches a file replaces an earlier block's rule, so
// each block lists every pattern its files obey. test/architecture applies the same rules to
// dynamic import() specifiers, which no-restricted-imports does not see.)
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const library = { regex: '(^|/)(cells|cmd|cli)(/|\\.js$)', message: 'a library imports no cell, command or CLI: move what both need below the cells (src/lib, src/datapath, src/maps)' };
const cellFace = (up) => ({ regex: `^${up}[^./][^/]*/(?!(index|types)\\.js$)`, message: "import another cell through its index.ts or types.ts only (re-export what it offers there)" });
const datapathImpl = (up) => ({ regex: `^${up}datapath-(bpf|memory)/`, message: 'a cell uses the datapath contract (src/datapath: types, tokens, bpf-config), not an implementation cell: what it needs goes into the contract, the implementation provides it' });

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bpf-loader-native/build/**', '.tap/**', 'api/generated/**', 'src/hubble/gen/**', 'build/**'] },
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
    files: ['src/{lib,bpf,maps,datapath,monitor,hubble,ui,netlink,cni,api,hive}/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [library] }],
    },
  },
  {
    files: ['src/lib/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [library, { regex: '(^|/)hive(/|\\.js$)', message: 'src/lib is below the hive: a library does not depend on the framework (move what it needs into src/lib, or take it as a parameter)' }],
      }],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '(^|/)cells(/|\\.js$)', message: 'the CLI talks to the agent through its API (src/api) and imports no cell: move what both need below the cells (src/lib)' }],
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
    files: ['src/datapath/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [library, { regex: '^\\./(model|memory)/|(^|/)maps(/|\\.js$)', message: 'src/datapath/*.ts is the datapath contract (types, tokens, constants): it imports no implementation (model/, memory/) and no map' }],
      }],
    },
  },
  {
    files: ['src/cells/*/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [cellFace('\\.\\./'), datapathImpl('\\.\\./')] }],
    },
  },
  {
    files: ['src/cells/*/*/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [cellFace('\\.\\./\\.\\./'), datapathImpl('\\.\\./\\.\\./')] }],
    },
  },
  {
    // the datapath's own cells: the selection and its two implementations
    files: ['src/cells/datapath*/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [cellFace('\\.\\./')] }],
    },
  },
  {
    files: ['src/cells/datapath*/*/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [cellFace('\\.\\./\\.\\./')] }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
  },
);
