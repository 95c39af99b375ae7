// What a new user hit with the CLI (issue 16), each against the real agent (memory datapath) or
// the real process: a closed pipe, the default socket, CELLIUM_SOCKET_PATH, status and health on
// the memory datapath, Conntrack, `policy get -o json`, the trace's namespace hint, -H without a
// scheme, a regular file as --socket-path, and the version.
import t from 'tap';
import { spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent } from '../api-integration/agent.js';
import { cli, startFakeAgent } from './fake-agent.js';
import * as fx from '../api-spec/fixtures.js';
import { CLI_VERSION, runCli } from '../../src/cli/main.js';
import { parseHost } from '../../src/cli/args.js';
import { UsageError } from '../../src/cli/errors.js';
import { defaultSocketPath, privateSocketDir } from '../../src/api/socket-path.js';
import { prepareSocket } from '../../src/cells/api-server/socket.js';
import { DEMO_POLICY } from '../../src/cmd/demo/policy.js';
import { needs } from '../needs.js';

const root = join(import.meta.dirname, '../..');
const built = existsSync(join(root, 'dist/src/cli/main.js'));
const dir = mkdtempSync(join(tmpdir(), 'cellium-cli-edges-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('a reader that closes the pipe early (cellium … | true) ends the CLI quietly', { skip: built ? false : 'dist/ not built' }, async (t) => {
  const agent = await startFakeAgent(t, { GetHealthz: { status: 200, body: fx.statusResponse } });
  for (const args of [['--help'], ['--socket-path', agent.socketPath, 'status', '--verbose']]) {
    const p = spawn(process.execPath, [join(root, 'bin/cellium.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout.destroy(); // the reader is gone before the CLI writes a byte
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => p.on('exit', (c) => r(c)));
    t.equal(err, '', `nothing on stderr, no EPIPE stack trace (${args.join(' ')})`);
    t.equal(code, 0, `exit 0 (${args.join(' ')})`);
  }
});

t.test('the default socket is absolute and the same for agent and CLI, from any directory', async (t) => {
  t.equal(defaultSocketPath({ uid: 1000, env: {}, cwd: '/home/u/work' }), '/tmp/cellium-1000/cellium.sock', 'no XDG_RUNTIME_DIR: /tmp/cellium-<uid>, not ./.cellium');
  t.equal(defaultSocketPath({ uid: 1000, env: {}, cwd: '/elsewhere' }), defaultSocketPath({ uid: 1000, env: {}, cwd: '/home/u/work' }));
  t.equal(defaultSocketPath({ uid: 1000, env: { XDG_RUNTIME_DIR: 'relative' } }), '/tmp/cellium-1000/cellium.sock', 'a relative XDG_RUNTIME_DIR is ignored');
  t.equal(defaultSocketPath({ uid: 1000, env: { CELLIUM_SOCKET_PATH: '/srv/a.sock', CELLIUM_SOCK: '/srv/b.sock' } }), '/srv/a.sock', 'CELLIUM_SOCKET_PATH first');
  t.equal(defaultSocketPath({ uid: 0, env: { CELLIUM_SOCK: '/srv/b.sock' } }), '/srv/b.sock', 'the older CELLIUM_SOCK still works');
});

t.test('the CLI honours CELLIUM_SOCKET_PATH like the agent does', async (t) => {
  const agent = await startFakeAgent(t, { GetHealthz: { status: 200, body: fx.statusResponse } });
  let out = '';
  const code = await runCli(['status', '-o', 'json'], { stdout: (s) => void (out += s), stderr: (s) => t.comment(s), readFile: async () => '', env: { CELLIUM_SOCKET_PATH: agent.socketPath } });
  t.equal(code, 0);
  t.same(JSON.parse(out), fx.statusResponse);
});

t.test('the agent refuses a socket directory another user owns', { skip: needs('root', 'gives a directory to another user') }, async (t) => {
  const other = join(dir, 'owned-by-someone');
  mkdirSync(other);
  chownSync(other, 4242, 4242);
  await t.rejects(prepareSocket(join(other, 'cellium.sock')), { name: 'SocketDirOwnerError', message: /belongs to uid 4242/ });
  t.equal(privateSocketDir(1000), '/tmp/cellium-1000');
});

t.test('on the memory datapath (the real agent)', async (t) => {
  const agent = await startAgent(t);
  const run = (...args: string[]) => cli(agent.socketPath, args);

  t.test('status says memory, shows no BPF maps, and no healthy module is UNKNOWN', async (t) => {
    const r = await run('status', '--verbose');
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^Datapath mode:\s+memory \(in the agent's process; no BPF programs or maps\)$/m);
    t.notMatch(r.stdout, /veth|BPF maps:|BPF MAP/);
    t.notMatch(r.stdout, /UNKNOWN/, 'every module reports');
    t.match(r.stdout, /^\s+identity: ok$/m);
    t.match(r.stdout, /^\s+timer-identity-gc: ok - scheduled every 15m, not run yet$/m);
    t.match(r.stdout, /^\s+datapath-bpf: ok - not in use: --datapath-mode=memory runs the memory datapath$/m);
    const j = JSON.parse((await run('status', '-o', 'json')).stdout) as Record<string, unknown>;
    t.equal(j['cellium-datapath'], 'memory');
    t.notOk('datapath-mode' in j || 'bpf-maps' in j, 'no device mode and no maps without the BPF datapath');
  });

  t.test('config reports connection tracking on (the datapath has it); values outside Enabled/Disabled are refused', async (t) => {
    const r = await run('config');
    t.match(r.stdout, /^Conntrack\s+Enabled$/m);
    t.match(r.stdout, /^ConntrackAccounting\s+Enabled$/m);
    const bad = await run('config', 'Conntrack=Sometimes');
    t.equal(bad.code, 1);
    t.match(bad.stderr, /invalid value "Sometimes" for option Conntrack.*Enabled, Disabled.*\[HTTP 400\]/);
  });

  t.test('policy get -o json prints the rules as JSON; trace hints at the missing namespace label', async (t) => {
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, DEMO_POLICY);
    t.equal((await run('policy', 'import', file)).code, 0);
    const j = JSON.parse((await run('policy', 'get', '-o', 'json')).stdout) as { revision: number; policy: { endpointSelector: { matchLabels: Record<string, string> } }[] };
    t.ok(Array.isArray(j.policy), 'the rules are an array, not an escaped string');
    t.same(j.policy[0]!.endpointSelector.matchLabels, { app: 'server', 'k8s:io.kubernetes.pod.namespace': 'demo' });
    t.type(j.revision, 'number');

    const bare = await run('policy', 'trace', '--src', 'k8s:app=client', '--dst', 'k8s:app=server', '--dport', '81/TCP');
    t.match(bare.stdout, /No rule selects the destination\n\s+Hint: the destination has no namespace label, and policy server-allows-client-on-80 \(namespace demo\) would select it: add --dst k8s:io\.kubernetes\.pod\.namespace=demo/);
    const ns = 'k8s:io.kubernetes.pod.namespace=demo';
    const full = await run('policy', 'trace', '-s', 'k8s:app=client', '-s', ns, '-d', 'k8s:app=server', '-d', ns, '--dport', '81/TCP');
    t.match(full.stdout, /^Verdict:\s+DENIED$/m, 'with the label the rule selects it');
    t.notMatch(full.stdout, /Hint:/);
  });
});

t.test('-H HOST:PORT without a scheme, and bad hosts', async (t) => {
  t.equal(parseHost('localhost:9'), 'http://localhost:9');
  t.equal(parseHost('http://127.0.0.1:9234/'), 'http://127.0.0.1:9234');
  t.equal(parseHost('[::1]:9234'), 'http://[::1]:9234');
  t.equal(parseHost('https://node1:9234'), 'https://node1:9234');
  for (const bad of ['ftp://x:1', 'http://:9', 'http://x:9/v1', 'unix:/x']) t.throws(() => parseHost(bad), UsageError, bad);
  const r = await cli('/nonexistent.sock', ['-H', 'localhost:9', 'status']);
  t.equal(r.code, 1);
  t.match(r.stderr, /cannot reach the cellium agent at http:\/\/localhost:9 \(ECONNREFUSED[^)]*\); start the agent with `cellium-agent --api-listen-address localhost:9 --api-token-file FILE` \(or TLS client certificates, see docs\/operations.md\)\n$/);
  const bad = await cli('/nonexistent.sock', ['-H', 'ftp://x:1', 'status']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /invalid --host "ftp:\/\/x:1"/);
});

t.test('a regular file given as --socket-path is reported as not a socket', async (t) => {
  const file = join(dir, 'not-a-socket');
  writeFileSync(file, 'hello');
  const r = await cli(file, ['status']);
  t.equal(r.code, 1);
  t.equal(r.stderr, `cellium: cannot reach the cellium agent at unix socket ${file} (ENOTSOCK: not a socket); it is a regular file; give the path of the agent's socket (its --socket-path)\n`);
  const d = await cli(dir, ['status']);
  t.match(d.stderr, /ENOTSOCK: not a socket\); it is a directory/);
});

t.test("the CLI's version is package.json's", async (t) => {
  t.equal(CLI_VERSION, (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version);
  let out = '';
  await runCli(['--version'], { stdout: (s) => void (out += s), stderr: () => undefined, readFile: async () => '', env: {} });
  t.equal(out.trim(), CLI_VERSION);
});

t.test('policy import of several files against the real agent: all or nothing, one revision', async (t) => {
  const agent = await startAgent(t);
  const run = (...args: string[]) => cli(agent.socketPath, args);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cli-policies-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cnp = (name: string, app: unknown) => `apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: ${name}, namespace: demo}\nspec:\n  endpointSelector: {matchLabels: {app: ${JSON.stringify(app)}}}\n`;
  const [a, b, bad] = [['a.yaml', cnp('a', 'web')], ['b.yaml', `${cnp('b', 'db')}---\n${cnp('b2', 'cache')}`], ['bad.yaml', `${cnp('c', 'x')}---\n${cnp('d', 'y')}  ingress: 5\n`]].map(([f, text]) => {
    writeFileSync(join(dir, f!), text!);
    return join(dir, f!);
  });
  const rules = async () => JSON.parse((await run('policy', 'get', '-o', 'json')).stdout) as { revision: number; policy: unknown[] };
  const before = await rules();
  const refused = await run('policy', 'import', a!, b!, bad!);
  t.equal(refused.code, 1);
  t.match(refused.stderr, new RegExp(`^cellium: invalid policy at ${bad!.replace(/[.]/g, '\\.')} document 2 /spec/ingress`, 'm'), 'the error names the file and its document');
  t.same(await rules(), before, 'nothing of the good files was imported');
  const ok = await run('policy', 'import', a!, b!, '-o', 'json');
  t.equal(ok.code, 0, ok.stderr);
  const after = await rules();
  t.equal(after.revision, before.revision + 1, 'one revision for the files');
  t.equal(after.policy.length, before.policy.length + 3);
});
