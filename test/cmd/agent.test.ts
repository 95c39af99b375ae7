import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const bin = join(import.meta.dirname, '../../bin/cellium-agent.js');
const built = existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js'));

/** Flags that keep a test agent's files in a temp dir and its datapath in memory. */
export function isolatedFlags(dir: string): string[] {
  return [`--state-dir=${dir}/state`, `--socket-path=${dir}/cellium.sock`, '--datapath-mode=memory', `--bpf-root=${dir}/bpf`, `--cni-delete-queue-dir=${dir}/delete-queue`]
    .filter((f) => knownFlags.has(f.slice(2, f.indexOf('='))));
}
const knownFlags = new Set(
  built ? [...spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' }).stdout.matchAll(/^ {2}--([a-z0-9-]+)=/gm)].map((m) => m[1]!) : [],
);

t.test('cellium-agent', { skip: built ? false : 'dist/ not built: run npm run build (npm test builds it)' }, async (t) => {
  t.test('--help lists every flag with its env var', async (t) => {
    const r = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
    t.equal(r.status, 0);
    t.match(r.stdout, /--hive-start-timeout=5m/);
    t.match(r.stdout, /CELLIUM_HIVE_START_TIMEOUT/);
  });

  t.test('hive prints cells, config and hooks; dot-graph prints DOT', async (t) => {
    const env = { ...process.env, CELLIUM_LOG_LEVEL: undefined };
    const r = spawnSync(process.execPath, [bin, 'hive'], { encoding: 'utf8', env });
    t.equal(r.status, 0, r.stderr);
    t.equal(r.stderr, '', 'no log line around the output (the cells log while being constructed)');
    t.match(r.stdout, /^Cells:/);
    t.match(r.stdout, /Configuration:[\s\S]*Start hooks:[\s\S]*Stop hooks:/);
    const d = spawnSync(process.execPath, [bin, 'hive', 'dot-graph'], { encoding: 'utf8', env });
    t.equal(d.status, 0);
    t.equal(d.stderr, '');
    t.match(d.stdout, /^digraph hive \{/);
  });

  t.test('a bad flag exits 2 naming the closest flag', async (t) => {
    const r = spawnSync(process.execPath, [bin, '--hive-start-timout=1m'], { encoding: 'utf8' });
    t.equal(r.status, 2);
    t.match(r.stderr, /unknown flag --hive-start-timout; did you mean "--hive-start-timeout"\?/);
    const v = spawnSync(process.execPath, [bin, '--hive-start-timeout=soon'], { encoding: 'utf8' });
    t.equal(v.status, 2);
    t.match(v.stderr, /expected a duration/);
  });

  t.test('runs in the foreground and stops cleanly on SIGTERM and SIGINT with exit 0', async (t) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      const dir = mkdtempSync(join(tmpdir(), 'cellium-agent-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const p = spawn(process.execPath, [bin, ...isolatedFlags(dir)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      let sent = false;
      p.stderr.on('data', (d: Buffer) => {
        err += d.toString();
        if (!sent && err.includes('"hive started"')) {
          sent = true;
          p.kill(sig);
        }
      });
      const code = await new Promise<number | null>((resolve) => p.on('exit', (c) => resolve(c)));
      t.equal(code, 0, `${sig}: exit 0\n${err}`);
      const lines = err.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; level: number });
      t.ok(lines.some((l) => l.msg === 'hive started'), 'structured start line');
      t.ok(lines.some((l) => l.msg === 'cellium-agent stopped'), 'structured stop line');
    }
  });
});
