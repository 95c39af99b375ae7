#!/usr/bin/env node
// Builds Cellium's native parts, one at a time, each only when a source is newer than its output:
//   bpf-loader  bpf-loader-native/build/Release/cellium_bpf.node   (node-gyp; needs libbpf-dev)
//   netlink     netlink-native/build/Release/cellium_netlink.node  (node-gyp; plain rtnetlink)
//   bpf         build/bpf/<name>.o from bpf/*.c                     (clang -target bpf; needs libbpf-dev)
//   shim        bin/cellium-cni from cni-shim/*.c                   (cc; static when the C library allows)
// Usage: node scripts/natives.js [--install] [PART...]   (default: every part, in that order)
// A part whose prerequisites are missing is skipped with one line saying what to install; without
// it the agent falls back to the memory datapath (the control-plane cells never need any native
// part). Without --install (scripts/build.d) a part that has its prerequisites but fails to build
// fails the build. With --install (the package's `install` script) nothing fails the install: each
// problem is one line, and the pure-JS remainder works. Plain JavaScript: it runs before any build.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const install = process.argv.includes('--install');
const PARTS = ['bpf-loader', 'netlink', 'bpf', 'shim'];
const FALLBACK = 'the control-plane cells, the API and the memory datapath work without it';

/** Prints one line on stdout (npm shows an install script's output only on failure or with --foreground-scripts). */
function say(line) {
  process.stdout.write(`cellium: ${line}\n`);
}

/** Runs a command in the package root; returns its exit status and output. */
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', ...opts });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}` };
}

/** Whether `cmd` runs (found on PATH and answers --version). */
function has(cmd) {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Newest modification time (ms) of the files under `paths` whose names match `re`. */
function newest(paths, re) {
  let t = 0;
  for (const p of paths) {
    const full = join(root, p);
    if (!existsSync(full)) continue;
    const st = statSync(full);
    if (st.isDirectory()) t = Math.max(t, newest(readdirSync(full).map((f) => join(p, f)), re));
    else if (re.test(p)) t = Math.max(t, st.mtimeMs);
  }
  return t;
}

/** True when `out` exists and no input is newer. */
function upToDate(out, inputs, re = /./) {
  const full = join(root, out);
  return existsSync(full) && statSync(full).mtimeMs >= newest(inputs, re);
}

/** How to run node-gyp: npm's own during `npm install`, else the project's, else the one on PATH. */
function nodeGyp() {
  const fromNpm = process.env.npm_config_node_gyp;
  if (fromNpm && existsSync(fromNpm)) return [process.execPath, fromNpm];
  try {
    return [process.execPath, createRequire(join(root, 'package.json')).resolve('node-gyp/bin/node-gyp.js')];
  } catch {
    return has('node-gyp') ? ['node-gyp'] : undefined;
  }
}

/** node-gyp's --nodedir: the headers installed beside the running node (no download), when present. */
function nodedirArgs() {
  if (process.env.npm_config_nodedir) return [];
  const prefix = dirname(dirname(process.execPath));
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
}

/** A part that was not built: why and what to do (one line). `detail`: the failed build's output (its prerequisites were there). */
class Skip {
  constructor(why, detail) {
    this.why = why;
    this.detail = detail;
  }
}

/** A temporary output name of this process's own: test files running in parallel may build at the same time. */
function tmpName(out) {
  return `${out}.tmp.${process.pid}`;
}

/** A build that failed although its prerequisites were there (its temporary output removed): the last line of its output says why. */
function failed(what, out, tmp) {
  if (tmp) rmSync(join(root, tmp), { force: true });
  const last = out.trim().split('\n').filter(Boolean).pop() ?? 'no output';
  return new Skip(`building ${what} failed (${last.trim()})`, out.trim());
}

/** Builds a node-gyp addon in `dir` unless it is up to date. */
function addon(dir, file, what) {
  const out = join(dir, 'build', 'Release', file);
  if (upToDate(out, [join(dir, 'src'), join(dir, 'binding.gyp')])) return undefined;
  const gyp = nodeGyp();
  if (!gyp) return new Skip(`not building ${what}: node-gyp not found (npm install -g node-gyp)`);
  if (!has(process.env.CXX ?? 'c++')) return new Skip(`not building ${what}: no C++ compiler (apt-get install g++ make python3)`);
  const r = run(gyp[0], [...gyp.slice(1), 'rebuild', '--directory', dir, '--jobs', 'max', ...nodedirArgs(), '--loglevel=warn']);
  if (!r.ok) return failed(what, r.out);
  return out;
}

const builders = {
  'bpf-loader': () => {
    if (!existsSync('/usr/include/bpf/libbpf.h')) return new Skip('not building the BPF loader addon: libbpf headers missing (apt-get install libbpf-dev)');
    return addon('bpf-loader-native', 'cellium_bpf.node', 'the BPF loader addon');
  },
  netlink: () => addon('netlink-native', 'cellium_netlink.node', 'the netlink addon'),
  bpf: () => {
    const clang = process.env.CLANG ?? 'clang';
    if (!has(clang)) return new Skip('not building the BPF programs: clang missing (apt-get install clang)');
    if (!existsSync('/usr/include/bpf/bpf_helpers.h')) return new Skip('not building the BPF programs: libbpf headers missing (apt-get install libbpf-dev)');
    mkdirSync(join(root, 'build', 'bpf'), { recursive: true });
    const archInc = `/usr/include/${run('uname', ['-m']).out.trim()}-linux-gnu`;
    const built = [];
    for (const src of readdirSync(join(root, 'bpf')).filter((f) => f.endsWith('.c'))) {
      const out = join('build', 'bpf', src.replace(/\.c$/, '.o'));
      if (upToDate(out, ['bpf'], /\.[ch]$/)) continue;
      const tmp = tmpName(out);
      const r = run(clang, ['-O2', '-g', '-target', 'bpf', '-Wall', '-Werror', '-I', 'bpf', '-I', archInc, '-c', join('bpf', src), '-o', tmp]);
      if (!r.ok) return failed(out, r.out, tmp);
      renameSync(join(root, tmp), join(root, out));
      built.push(out);
    }
    return built.length ? built.join(', ') : undefined;
  },
  shim: () => {
    const out = join('bin', 'cellium-cni');
    if (upToDate(out, ['cni-shim'], /\.[ch]$/)) return undefined;
    const cc = process.env.CC ?? 'cc';
    if (!has(cc)) return new Skip('not building the CNI shim (bin/cellium-cni): no C compiler (apt-get install gcc)');
    mkdirSync(join(root, 'bin'), { recursive: true });
    const srcs = readdirSync(join(root, 'cni-shim')).filter((f) => f.endsWith('.c')).map((f) => join('cni-shim', f));
    const flags = ['-std=c11', '-O2', '-Wall', '-Wextra', '-D_FORTIFY_SOURCE=2', '-fstack-protector-strong'];
    const tmp = tmpName(out);
    let r = run(cc, [...flags, '-static', '-o', tmp, ...srcs]);
    if (!r.ok) r = run(cc, [...flags, '-o', tmp, ...srcs]);
    if (!r.ok) return failed('the CNI shim', r.out, tmp);
    run('strip', [tmp]);
    renameSync(join(root, tmp), join(root, out));
    return out;
  },
};

function main() {
  const asked = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const unknown = asked.filter((p) => !PARTS.includes(p));
  if (unknown.length) {
    process.stderr.write(`natives: unknown part ${unknown.join(', ')}; parts are ${PARTS.join(', ')}\n`);
    return 2;
  }
  if (process.env.CELLIUM_SKIP_NATIVE_BUILD) {
    say(`CELLIUM_SKIP_NATIVE_BUILD is set: not building the native parts; ${FALLBACK}`);
    return 0;
  }
  if (process.platform !== 'linux') {
    say(`not building the native parts on ${process.platform}: the BPF datapath, netlink and the CNI shim are Linux-only; ${FALLBACK}`);
    return 0;
  }
  let broken = false;
  for (const part of asked.length ? asked : PARTS) {
    const result = builders[part]();
    if (result instanceof Skip) {
      if (result.detail !== undefined && !install) {
        process.stderr.write(`${result.detail}\n`);
        broken = true;
      }
      say(`${result.why}; ${FALLBACK}`);
    } else if (result) {
      say(`built ${result}`);
    }
  }
  return broken ? 1 : 0;
}

process.exitCode = main();
