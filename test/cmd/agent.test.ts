import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isolatedFlags, stopOnceStarted } from './agent-process.js';

const bin = join(import.meta.dirname, '../../bin/cellium-agent.js');
const built = existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js'));


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
      const { code, err } = await stopOnceStarted(p, sig);
      t.equal(code, 0, `${sig}: exit 0\n${err}`);
      const lines = err.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; level: number });
      t.ok(lines.some((l) => l.msg === 'hive started'), 'structured start line');
      t.ok(lines.some((l) => l.msg === 'cellium-agent stopped'), 'structured stop line');
    }
  });
});
