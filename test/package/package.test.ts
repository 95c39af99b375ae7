// The npm package as a user gets it: `npm pack` (prepack builds), the tarball's contents, then an
// install into a fresh project. First with no compiler (CC/CXX/CLANG unusable): the install says in
// one line per native part what it skipped, and the pure-JS remainder works there: a strict type
// check of a consumer (NodeNext, no skipLibCheck), an embedded control-plane cell, a cell test with
// a mock under node:test, `cellium --help`, and `cellium-agent` serving /healthz on the memory
// datapath. Then `npm rebuild` with the compilers builds the natives on install. Finally a global
// install into a temporary prefix gives working commands. Root is not needed; npm resolves the
// dependencies from its cache when it can (--prefer-offline), else from the registry.
import t from 'tap';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const root = join(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string; devDependencies: Record<string, string> };
const npmOk = spawnSync('npm', ['--version'], { encoding: 'utf8' }).status === 0;
const built = existsSync(join(root, 'dist/src/hive/index.js'));
const skip = !npmOk ? 'npm not found' : !built ? 'dist/ not built: run npm run build (npm test builds it)' : false;

/** The environment of a command run as a user would: no npm_* variables of the npm running the tests. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return { ...env, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false', ...extra };
}

/** Runs a command (bounded); returns its result with stdout+stderr in `out`. */
function sh(cmd: string, args: readonly string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): SpawnSyncReturns<string> & { out: string } {
  const r = spawnSync(cmd, args, { cwd: opts.cwd, env: opts.env ?? userEnv(), encoding: 'utf8', timeout: opts.timeoutMs ?? 300_000, maxBuffer: 64 << 20 });
  return Object.assign(r, { out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` });
}

/** A message naming `what`, with the command's output when it failed (kept short when it passed). */
function said(r: { status: number | null; out: string }, what: string): string {
  return r.status === 0 ? what : `${what}\n${r.out}`;
}

/** GET /v1/healthz on a unix socket: status code and parsed body. */
function healthz(socketPath: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/v1/healthz', method: 'GET', timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

// packing, three installs and compiling two addons take minutes on a busy machine
t.setTimeout(900_000);

t.test('the npm package', { skip }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'cellium-pkg-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));

  const pack = sh('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, timeoutMs: 600_000 });
  t.equal(pack.status, 0, said(pack, 'npm pack (prepack builds)'));
  if (pack.status !== 0) return;
  const packed = (JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[])[0]!;
  const tarball = join(work, packed.filename);
  const files = new Set(packed.files.map((f) => f.path));

  t.test('the tarball ships what a user needs and nothing else', async (t) => {
    for (const f of [
      'package.json', 'README.md', 'LICENSE', 'api/openapi.yaml', 'bin/cellium.js', 'bin/cellium-agent.js', 'scripts/natives.js',
      'dist/src/hive/index.js', 'dist/src/hive/index.d.ts', 'dist/src/cells/ipam/index.d.ts', 'dist/src/api/models.d.ts',
      'dist/api/generated/schema.d.ts', 'dist/src/cli/main.js', 'dist/src/cmd/agent.js',
      'bpf/bpf_lxc.c', 'bpf-loader-native/binding.gyp', 'bpf-loader-native/src/addon.cc', 'netlink-native/binding.gyp', 'netlink-native/src/addon.cc', 'cni-shim/cellium-cni.c',
      'src/ui/static/index.html', 'src/ui/static/app.js',
    ]) t.ok(files.has(f), `ships ${f}`);
    const unwanted = [...files].filter((f) =>
      // src/ui/static/ is the flow page's assets (HTML, CSS, browser JS), served from the package as they are
      (/^(test|bench|src|docs|shared|build|\.tap)\//.test(f) && !f.startsWith('src/ui/static/')) || /^dist\/(bench|docs)\//.test(f) || /\.(node|o|map|tsbuildinfo)$/.test(f) || f === 'bin/cellium-cni' || /(^|\/)build\//.test(f) ||
      (f.endsWith('.ts') && !f.endsWith('.d.ts')));
    t.same(unwanted, [], 'no sources, tests, benches, source maps or machine-built binaries');
  });

  // A fresh project; typescript and @types/node at the versions this repository uses.
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }, null, 2));
  // CI=true as in an app's CI pipeline: a postinstall step that fails there fails the app's install
  const noCompiler = userEnv({ CC: 'cellium-no-cc', CXX: 'cellium-no-cxx', CLANG: 'cellium-no-clang', CI: 'true' });
  const install = sh('npm', ['install', '--prefer-offline', '--foreground-scripts', '--no-package-lock', tarball,
    `typescript@${pkg.devDependencies.typescript}`, `@types/node@${pkg.devDependencies['@types/node']}`], { cwd: app, env: noCompiler });
  t.equal(install.status, 0, said(install, 'npm install of the tarball without a compiler'));
  if (install.status !== 0) return;
  const installed = join(app, 'node_modules', pkg.name);

  t.test('without a compiler, the install says what it skipped, one line per native part', async (t) => {
    const lines = install.out.split('\n').filter((l) => l.startsWith('cellium: '));
    t.match(lines.join('\n'), /not building the BPF loader addon: no C\+\+ compiler/);
    t.match(lines.join('\n'), /not building the netlink addon: no C\+\+ compiler/);
    t.match(lines.join('\n'), /not building the BPF programs: clang missing/);
    t.match(lines.join('\n'), /not building the CNI shim \(bin\/cellium-cni\): no C compiler/);
    for (const l of lines) t.match(l, /the control-plane cells, the API and the memory datapath work without it$/, 'each line says what still works');
    t.notOk(existsSync(join(installed, 'bin/cellium-cni')), 'no shim was built');
    t.match(install.out, /cellium \(postinstall\): @grpc\/grpc-js is installed outside this package \(hoisted\): not patched/,
      'grpc-js hoisted into the app: the app\'s copy is left alone, and the install says so');
  });

  t.test('a strict consumer type-checks (NodeNext, no skipLibCheck) and runs', async (t) => {
    for (const f of ['embed.ts', 'cell-test.ts']) copyFileSync(join(import.meta.dirname, 'consumer', f), join(app, f));
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, types: ['node'], outDir: 'out', rootDir: '.' },
      files: ['embed.ts', 'cell-test.ts'],
    }, null, 2));
    const tsc = sh(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: app });
    t.equal(tsc.status, 0, said(tsc, 'tsc: the consumer type-checks'));
    if (tsc.status !== 0) return;

    const stateDir = join(work, 'embed-state');
    const embed = sh(process.execPath, ['out/embed.js', stateDir, 'k8s:app=web', 'k8s:io.kubernetes.pod.namespace=shop'], { cwd: app });
    t.equal(embed.status, 0, said(embed, 'the embedding runs'));
    const r = JSON.parse(embed.stdout) as { id: number; again: number; labels: string[] };
    t.ok(r.id >= 256, `a global identity (${r.id})`);
    t.equal(r.again, r.id, 'the same labels in another order: the same identity');
    t.same(r.labels, ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=shop']);
    t.match(readFileSync(join(stateDir, 'identities.json'), 'utf8'), /k8s:app=web/, 'the identity is in the tool\'s state directory');
    t.equal(embed.stderr, '', 'a silent logger: no log lines');

    const test = sh(process.execPath, ['--test', 'out/cell-test.js'], { cwd: app });
    t.equal(test.status, 0, said(test, 'node --test passes'));
    t.match(test.stdout, /# pass 2/);
    t.match(test.stdout, /# fail 0/);
  });

  t.test('the bins: cellium --help, and cellium-agent serving /healthz on the memory datapath', async (t) => {
    const bin = join(app, 'node_modules/.bin');
    const help = sh(join(bin, 'cellium'), ['--help'], { cwd: app });
    t.equal(help.status, 0, said(help, 'cellium --help'));
    t.match(help.stdout, /Usage: cellium/);
    const version = sh(join(bin, 'cellium'), ['--version'], { cwd: app });
    t.equal(version.stdout.trim(), pkg.version, 'the version is package.json\'s');
    const agentHelp = sh(join(bin, 'cellium-agent'), ['--help'], { cwd: app });
    t.equal(agentHelp.status, 0, said(agentHelp, 'cellium-agent --help'));
    t.match(agentHelp.stdout, /--datapath-mode=/);

    const dir = join(work, 'agent');
    const socketPath = join(dir, 'cellium.sock');
    const agent = spawn(join(bin, 'cellium-agent'), ['--datapath-mode=memory', `--socket-path=${socketPath}`, `--state-dir=${dir}/state`, `--cni-delete-queue-dir=${dir}/queue`, `--bpf-root=${dir}/bpf`],
      { cwd: app, env: userEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    agent.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise<number | null>((r) => agent.on('exit', (c) => r(c)));
    t.teardown(() => void agent.kill('SIGKILL'));
    let health: Awaited<ReturnType<typeof healthz>> | undefined;
    for (let i = 0; i < 120 && !health && agent.exitCode === null; i++) {
      health = existsSync(socketPath) ? await healthz(socketPath).catch(() => undefined) : undefined;
      if (!health) await sleep(250);
    }
    t.ok(health, health ? 'the agent answers /healthz' : `the agent does not answer on ${socketPath}\n${log}`);
    t.equal(health?.status, 200);
    t.equal((health?.body.cilium as { state?: string } | undefined)?.state, 'Ok', JSON.stringify(health?.body.cilium));
    t.equal(health?.body['cellium-datapath'], 'memory', 'the memory datapath');
    const status = sh(join(bin, 'cellium'), ['--socket-path', socketPath, 'status'], { cwd: app });
    t.equal(status.status, 0, said(status, 'cellium status'));
    t.match(status.stdout, /^Datapath mode:\s+memory/m);
    agent.kill('SIGTERM');
    const code = await exited;
    t.equal(code, 0, code === 0 ? 'the agent stops cleanly on SIGTERM' : `the agent exited ${code}\n${log}`);
  });

  const haveCompilers = ['c++', 'cc'].every((c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0);
  const nativeSkip = process.platform !== 'linux' ? 'the native parts are Linux-only' : !haveCompilers ? 'no C/C++ compiler on this machine' : false;
  t.test('with the compilers, npm rebuild builds the native parts on install', { skip: nativeSkip }, async (t) => {
    const rebuild = sh('npm', ['rebuild', pkg.name, '--foreground-scripts'], { cwd: app, timeoutMs: 600_000 });
    t.equal(rebuild.status, 0, said(rebuild, 'npm rebuild cellium'));
    t.match(rebuild.out, /cellium: built netlink-native\/build\/Release\/cellium_netlink\.node/);
    t.match(rebuild.out, /cellium: built bin\/cellium-cni/);
    const shim = sh(join(installed, 'bin/cellium-cni'), [], { cwd: app, env: { CNI_COMMAND: 'VERSION' } });
    t.equal(shim.status, 0, said(shim, 'the shim answers VERSION'));
    t.match(shim.stdout, /"supportedVersions"/, 'the shim built on install answers VERSION');
    const load = (file: string): string => sh(process.execPath, ['-e', `require(${JSON.stringify(file)}); console.log('loaded')`], { cwd: app }).out.trim();
    t.equal(load(join(installed, 'netlink-native/build/Release/cellium_netlink.node')), 'loaded', 'the netlink addon loads');
    if (existsSync('/usr/include/bpf/libbpf.h')) {
      t.equal(load(join(installed, 'bpf-loader-native/build/Release/cellium_bpf.node')), 'loaded', 'the BPF loader addon loads');
      if (spawnSync('clang', ['--version'], { stdio: 'ignore' }).status === 0) t.ok(existsSync(join(installed, 'build/bpf/bpf_lxc.o')), 'bpf_lxc.o was compiled');
    } else {
      t.match(rebuild.out, /not building the BPF loader addon: libbpf headers missing \(apt-get install libbpf-dev\)/);
    }
  });

  t.test('npm install -g gives working commands', async (t) => {
    const prefix = join(work, 'global');
    const g = sh('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', tarball], { cwd: work, env: userEnv({ CELLIUM_SKIP_NATIVE_BUILD: '1' }) });
    t.equal(g.status, 0, said(g, 'npm install -g'));
    for (const cmd of ['cellium', 'cellium-agent']) {
      const r = sh(join(prefix, 'bin', cmd), ['--help'], { cwd: work });
      t.equal(r.status, 0, said(r, `${cmd} --help`));
    }
    const v = sh(join(prefix, 'bin', 'cellium'), ['--version'], { cwd: work });
    t.equal(v.stdout.trim(), pkg.version);
  });
});
