// The agent as a process with --enable-hubble and the memory datapath (no root): the real hubble
// CLI reaches it on --hubble-socket-path (`hubble status`, `hubble list nodes`, an empty
// `hubble observe`), a bad --hubble-event-buffer-capacity stops the start naming the flag, and the
// socket is gone after the agent stopped.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { needs } from '../needs.js';
import { until } from '../until.js';
import { AGENT_BIN, isolatedFlags } from '../cmd/agent-process.js';

const run = promisify(execFile);

t.test('hubble status, list nodes and observe against an agent process', { skip: needs(['built', 'hubble']) }, async (t) => {
  const bin = spawnSync('bash', [join(import.meta.dirname, '..', '..', 'scripts', 'hubble.sh'), 'path'], { encoding: 'utf8' }).stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socket = join(dir, 'run', 'hubble.sock');
  const agent = spawn(process.execPath, [AGENT_BIN, ...isolatedFlags(dir), '--enable-hubble', `--hubble-socket-path=${socket}`, '--hubble-event-buffer-capacity=255', '--node-name=node-a'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  agent.stderr.on('data', (b: Buffer) => (log += b.toString()));
  const exited = new Promise<number | null>((r) => agent.on('exit', (code) => r(code)));
  t.teardown(() => void agent.kill('SIGKILL'));
  t.ok(await until('the Hubble socket', () => existsSync(socket), 20000, 50).catch((e: Error) => t.fail(`${e.message}: ${log}`)), 'the socket appears');
  const hubble = async (...args: string[]): Promise<string> => (await run(bin, [...args, '--server', `unix://${socket}`], { timeout: 20000 })).stdout;
  const status = await hubble('status');
  t.match(status, /Healthcheck \(via unix:\/\/.*hubble\.sock\): Ok/);
  t.match(status, /Current\/Max Flows: 0\/255/);
  t.match(await hubble('list', 'nodes'), /node-a\s+Connected/);
  t.equal(await hubble('observe', '--last', '10', '-o', 'json'), '', 'the memory datapath has no flows');
  agent.kill('SIGTERM');
  t.equal(await exited, 0, 'a clean stop');
  t.notOk(existsSync(socket), 'the socket is removed at stop');
});

t.test('a bad --hubble-event-buffer-capacity stops the start, naming the flag', { skip: needs('built') }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = spawnSync(process.execPath, [AGENT_BIN, ...isolatedFlags(dir), '--enable-hubble', '--hubble-event-buffer-capacity=4096'], { encoding: 'utf8', timeout: 20000 });
  t.not(r.status, 0);
  t.match(r.stderr, /--hubble-event-buffer-capacity "4096": expected 2\^n - 1/);
});
