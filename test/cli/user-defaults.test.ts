// A user who is not root runs `cellium-agent` with no path flags from some directory (issue 16):
// the real agent process starts without an error line, keeps its state under the per-user
// default (~/.local/state/cellium/state), its DEL queue beside it, its socket under
// $XDG_RUNTIME_DIR, writes nothing into the working directory, and `cellium` run from another
// directory finds it. As root the test runs the processes as `nobody`; otherwise as the user.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_POLICY } from '../../src/cmd/demo/policy.js';

const root = join(import.meta.dirname, '../..');
const built = existsSync(join(root, 'dist/src/cmd/agent.js'));
const asRoot = process.getuid?.() === 0;
const uid = asRoot ? 65534 : process.getuid!();
const gid = asRoot ? 65534 : process.getgid!();

/**
 * Runs a node script as the user with only `env` (through `env -i`, so nothing of the test
 * runner's environment reaches it), collecting its output.
 */
function run(script: string, args: string[], cwd: string, env: Record<string, string>): ChildProcess & { out: () => string } {
  const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const p = spawn('env', ['-i', ...vars, process.execPath, join(root, script), ...args], { cwd, uid, gid, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return Object.assign(p, { out: () => out });
}

function exited(p: ChildProcess): Promise<number | null> {
  return p.exitCode !== null ? Promise.resolve(p.exitCode) : new Promise((r) => p.on('exit', (c) => r(c)));
}

/** Why the test cannot run here, or false: `nobody` must be able to read the repository (CI may keep it under /root). */
function skipReason(): string | false {
  if (!built) return 'dist/ not built (npm run build)';
  if (!asRoot) return false;
  const r = spawnSync('env', ['-i', process.execPath, '-e', `require('node:fs').accessSync(${JSON.stringify(join(root, 'dist/src/cmd/agent.js'))}, require('node:fs').constants.R_OK)`], { uid, gid, cwd: '/', stdio: 'ignore' });
  return r.status === 0 ? false : `nobody (uid ${uid}) cannot read ${root}: the test runs the agent as that user`;
}

t.test('a non-root agent started with no path flags uses per-user defaults', { skip: skipReason() }, async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'cellium-user-defaults-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755);
  const [home, work, elsewhere, runtime] = ['home', 'work', 'elsewhere', 'run'].map((d) => join(base, d)) as [string, string, string, string];
  for (const d of [home, work, elsewhere, runtime]) {
    mkdirSync(d, { mode: 0o700 });
    if (asRoot) chownSync(d, uid, gid);
  }
  const policy = join(elsewhere, 'policy.yaml');
  writeFileSync(policy, DEMO_POLICY, { mode: 0o644 });
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, XDG_RUNTIME_DIR: runtime };

  const agent = run('bin/cellium-agent.js', ['--datapath-mode=memory'], work, env);
  t.teardown(() => void agent.kill('SIGKILL'));
  const socket = join(runtime, 'cellium', 'cellium.sock');
  for (let i = 0; i < 600 && !existsSync(socket) && agent.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50));
  t.ok(existsSync(socket), `the agent listens on $XDG_RUNTIME_DIR/cellium/cellium.sock\n${agent.out()}`);

  const status = run('bin/cellium.js', ['status'], elsewhere, env);
  t.equal(await exited(status), 0, `cellium status from another directory finds the agent: ${status.out()}`);
  const imp = run('bin/cellium.js', ['policy', 'import', policy], elsewhere, env);
  t.equal(await exited(imp), 0, imp.out());
  t.ok(existsSync(join(home, '.local/state/cellium/state/policies.json')), 'state under ~/.local/state/cellium/state');

  agent.kill('SIGTERM');
  t.equal(await exited(agent), 0, 'stops cleanly');
  const lines = agent.out().trim().split('\n').map((l) => JSON.parse(l) as { level: number; msg: string; dir?: string });
  t.same(lines.filter((l) => l.level >= 50).map((l) => l.msg), [], 'no error line (e.g. the root-owned DEL queue)');
  t.same(readdirSync(work), [], 'nothing written into the working directory');
  t.notOk(existsSync('/var/run/cellium/delete-queue') && lines.some((l) => l.dir === '/var/run/cellium/delete-queue'), "the root DEL queue is not the user's");
});
