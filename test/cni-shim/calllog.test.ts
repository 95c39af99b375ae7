// The shim's call log (the netconf's "log-file" and "enable-debug" keys): one line per call with
// time, command, container id, netns, ifname, code, exit and duration; more with debug; a log that
// cannot be written (missing directory under a file, a symlink, a FIFO, a read-only file system, a
// device) never fails the call.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cniEmptySuccess, cniError, cniSuccess, writeCniResponse } from '../../src/cni/protocol.js';
import { buildShim, runShim, startFakeAgent, tempDir } from './run-shim.js';
import { needs } from '../needs.js';

buildShim();

const tmp = tempDir('cellium-shimlog-');
t.teardown(tmp.cleanup);

const env = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c0ffee42',
  CNI_NETNS: '/proc/self/ns/net',
  CNI_IFNAME: 'eth0',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=logpod',
  CNI_PATH: '/opt/cni/bin',
};
const result = { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }], ips: [] };

/** The parsed key=value pairs of one log line (values are JSON strings or bare numbers). */
function fields(line: string): Record<string, string> {
  const out: Record<string, string> = { time: line.split(' ')[0]! };
  for (const m of line.matchAll(/ ([A-Za-z]+)=("(?:[^"\\]|\\.)*"|[^ ]+)/g)) out[m[1]!] = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
  return out;
}

function lines(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

t.test('one line per call, appended, 0600; errors carry the code and message', async (t) => {
  const socketPath = join(tmp.dir, 'agent.sock');
  const agent = await startFakeAgent(socketPath, (req, res) => {
    const command = (JSON.parse(req.body) as { command: string }).command;
    if (command === 'CHECK') writeCniResponse(res, cniError('1.0.0', 3, 'no such container', 'c0ffee42'));
    else writeCniResponse(res, command === 'ADD' ? cniSuccess(result) : cniEmptySuccess());
  });
  t.teardown(agent.close);
  const log = join(tmp.dir, 'sub', 'cellium-cni.log'); // the directory does not exist yet
  const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'net1', type: 'cellium-cni', 'socket-path': socketPath, 'log-file': log });

  t.equal((await runShim(env, stdin)).code, 0, 'ADD succeeds');
  t.equal((await runShim({ ...env, CNI_COMMAND: 'DEL' }, stdin)).code, 0, 'DEL succeeds');
  t.equal((await runShim({ ...env, CNI_COMMAND: 'CHECK' }, stdin)).code, 1, 'CHECK fails as the agent says');
  t.equal((await runShim({ ...env, CNI_IFNAME: 'eth0;x' }, stdin)).code, 1, 'a bad CNI_IFNAME fails in the shim');
  t.equal((await runShim({ CNI_COMMAND: 'VERSION' }, stdin)).code, 0, 'VERSION');

  t.equal(statSync(log).mode & 0o777, 0o600, 'created 0600');
  const got = lines(log).map(fields);
  t.equal(got.length, 5, 'one line per call');
  t.same(got.map((f) => f.command), ['ADD', 'DEL', 'CHECK', 'ADD', 'VERSION']);
  const add = got[0]!;
  t.match(add.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'UTC time with milliseconds');
  t.same({ c: add.containerId, n: add.netns, i: add.ifname, code: add.code, exit: add.exit }, { c: 'c0ffee42', n: '/proc/self/ns/net', i: 'eth0', code: '0', exit: '0' });
  t.match(add.durationMs, /^\d+\.\d$/, 'a duration in ms');
  t.notOk('output' in add || 'args' in add, 'no debug keys without enable-debug');
  t.same({ code: got[2]!.code, exit: got[2]!.exit, msg: got[2]!.msg }, { code: '3', exit: '1', msg: 'no such container' }, 'the agent error');
  t.same({ code: got[3]!.code, ifname: got[3]!.ifname }, { code: '7', ifname: 'eth0;x' }, 'the shim’s own refusal');
  t.match(got[3]!.msg, /CNI_IFNAME/);
});

t.test('enable-debug adds the args, the socket, the network and the output', async (t) => {
  const socketPath = join(tmp.dir, 'agent-debug.sock');
  const agent = await startFakeAgent(socketPath, (_req, res) => writeCniResponse(res, cniSuccess(result)));
  t.teardown(agent.close);
  const log = join(tmp.dir, 'debug.log');
  const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'dbgnet', type: 'cellium-cni', 'socket-path': socketPath, 'log-file': log, 'enable-debug': true });
  t.equal((await runShim(env, stdin)).code, 0);
  const [line] = lines(log).map(fields);
  t.equal(line!.args, env.CNI_ARGS);
  t.equal(line!.path, env.CNI_PATH);
  t.equal(line!.socket, socketPath);
  t.equal(line!.network, 'dbgnet');
  t.equal(line!.stdinBytes, String(Buffer.byteLength(stdin)));
  t.same(JSON.parse(line!.output!), result, 'the result printed');
});

t.test('a value cannot forge a line', async (t) => {
  const log = join(tmp.dir, 'forge.log');
  const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'n', type: 'cellium-cni', 'log-file': log });
  await runShim({ CNI_COMMAND: 'FROB\nfake=line' }, stdin);
  const all = lines(log);
  t.equal(all.length, 1, 'still one line');
  t.equal(fields(all[0]!).command, 'FROB\nfake=line', 'the newline is escaped inside the value');
});

t.test('a log that cannot be written never fails the call', async (t) => {
  const socketPath = join(tmp.dir, 'agent-unwritable.sock');
  const agent = await startFakeAgent(socketPath, (_req, res) => writeCniResponse(res, cniSuccess(result)));
  t.teardown(agent.close);
  const aFile = join(tmp.dir, 'plain-file');
  writeFileSync(aFile, '');
  const target = join(tmp.dir, 'symlink-target');
  const link = join(tmp.dir, 'link.log');
  symlinkSync(target, link);
  const fifo = join(tmp.dir, 'fifo.log');
  execFileSync('mkfifo', [fifo]);
  const dir = join(tmp.dir, 'a-directory.log');
  mkdirSync(dir);
  for (const path of [join(aFile, 'under-a-file.log'), link, fifo, dir, '/proc/cellium-no-such-dir/x.log']) {
    const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'n', type: 'cellium-cni', 'socket-path': socketPath, 'log-file': path });
    const run = await runShim(env, stdin);
    t.equal(run.code, 0, `ADD succeeds with log-file ${path}`);
    t.same(JSON.parse(run.stdout), result);
  }
  t.notOk(existsSync(target), 'the symlink was not followed to create its target');
  t.ok(lstatSync(link).isSymbolicLink(), 'the symlink is left alone');
  t.ok(lstatSync(fifo).isFIFO(), 'the FIFO is left alone (and did not block the call)');
});

t.test('a log directory that cannot be written (read-only file system, a device) never fails the call', { skip: needs('root', 'mounts a read-only file system') }, async (t) => {
  const socketPath = join(tmp.dir, 'agent-readonly.sock');
  const agent = await startFakeAgent(socketPath, (_req, res) => writeCniResponse(res, cniSuccess(result)));
  t.teardown(agent.close);
  const ro = join(tmp.dir, 'read-only');
  mkdirSync(ro);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', ro]);
  t.teardown(() => execFileSync('umount', [ro]));
  for (const path of [join(ro, 'cellium-cni.log'), '/dev/full', '/dev/null']) {
    const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'n', type: 'cellium-cni', 'socket-path': socketPath, 'log-file': path, 'enable-debug': true });
    const run = await runShim(env, stdin);
    t.equal(run.code, 0, `ADD succeeds with log-file ${path}: ${run.stderr}`);
    t.same(JSON.parse(run.stdout), result, 'and prints only its result');
  }
  t.notOk(existsSync(join(ro, 'cellium-cni.log')));
});

t.test('bad log keys are a clear configuration error (code 7)', async (t) => {
  const base = { cniVersion: '1.0.0', name: 'n', type: 'cellium-cni' };
  for (const [key, value] of [
    ['log-file', 42],
    ['log-file', 'relative/path.log'],
    ['log-file', ''],
    ['enable-debug', 'true'],
    ['enable-debug', 1],
  ] as const) {
    const run = await runShim(env, JSON.stringify({ ...base, [key]: value }));
    t.equal(run.code, 1, `${key}=${JSON.stringify(value)} fails`);
    const err = JSON.parse(run.stdout) as { code: number; msg: string };
    t.equal(err.code, 7);
    t.match(err.msg, key, 'the message names the key');
  }
});
