// How the CLI fails: an unreachable agent in one line, API errors with the server's message,
// usage errors, and the launcher's exit code.
import t from 'tap';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { cli, startFakeAgent } from './fake-agent.js';
import * as fx from '../api-spec/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'cellium-cli-err-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('no socket: one line naming the socket and how to start the agent, exit 1', async (t) => {
  const sock = join(dir, 'missing.sock');
  const r = await cli(sock, ['endpoint', 'list']);
  t.equal(r.code, 1);
  t.equal(r.stdout, '');
  t.equal(
    r.stderr,
    `cellium: cannot reach the cellium agent at unix socket ${sock} (ENOENT: no such socket); start the agent with \`cellium-agent --socket-path ${sock}\`\n`,
  );
});

t.test('a stale socket of a dead agent: connection refused, one line', async (t) => {
  const sock = join(dir, 'stale.sock');
  // A process that listens and dies without unlinking leaves the socket file behind.
  spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`], { stdio: 'ignore' });
  t.ok(existsSync(sock), 'socket file left behind');
  const r = await cli(sock, ['status']);
  t.equal(r.code, 1);
  t.equal(r.stderr.split('\n').length, 2, 'one line');
  t.match(r.stderr, `unix socket ${sock} (ECONNREFUSED: connection refused: no agent is listening)`);
});

t.test('the default socket path is used without --socket-path ($CELLIUM_SOCK)', async (t) => {
  const agent = await startFakeAgent(t, { GetHealthz: { status: 200, body: fx.statusResponse } });
  const { runCli } = await import('../../src/cli/main.js');
  let out = '';
  const code = await runCli(['status', '-o', 'json'], { stdout: (s) => void (out += s), stderr: () => undefined, readFile: async () => '', env: { CELLIUM_SOCK: agent.socketPath } });
  t.equal(code, 0);
  t.same(JSON.parse(out), fx.statusResponse);
});

t.test('API errors print the server message and exit 1', async (t) => {
  const agent = await startFakeAgent(t, {
    GetEndpointID: (req) =>
      req.path.id === '99'
        ? { status: 404, body: 'endpoint 99 not found' }
        : req.path.id === '98'
          ? { status: 429, body: 'endpoint-get: rate limited', headers: { 'Retry-After': '3' } }
          : { status: 400, body: 'invalid endpoint id' },
    PutPolicy: { status: 500, body: 'policy import failed: repository is read-only' },
  });
  const notFound = await cli(agent.socketPath, ['endpoint', 'get', '99']);
  t.equal(notFound.code, 1);
  t.equal(notFound.stderr, 'cellium: endpoint 99 not found [HTTP 404]\n');
  const limited = await cli(agent.socketPath, ['endpoint', 'get', '98']);
  t.equal(limited.stderr, 'cellium: endpoint-get: rate limited; retry after 3s [HTTP 429]\n');
  const f = join(dir, 'p.json');
  writeFileSync(f, '[]');
  const failed = await cli(agent.socketPath, ['policy', 'import', f]);
  t.equal(failed.code, 1);
  t.equal(failed.stderr, `cellium: ${f}: policy import failed: repository is read-only [HTTP 500]\n`);
});

t.test('a request the agent rejects: the field and what was expected', async (t) => {
  const agent = await startFakeAgent(t, {});
  const r = await cli(agent.socketPath, ['endpoint', 'get', 'web-0']);
  t.equal(r.code, 1);
  t.equal(r.stderr, 'cellium: /path/id must be an endpoint id: N, cilium-local:N, container-id:ID, pod-name:NAMESPACE/NAME, cni-attachment-id:ID:IFNAME, ipv4:ADDRESS or ipv6:ADDRESS [HTTP 400]\n');
  const id = await cli(agent.socketPath, ['identity', 'get', 'web']);
  t.equal(id.stderr, 'cellium: /path/id must be a numeric identity [HTTP 400]\n');
  const ip = await cli(agent.socketPath, ['ipam', 'release', '10.0.0.300']);
  t.equal(ip.stderr, 'cellium: /path/ip must match a schema in anyOf (expected string in format ipv4 or string in format ipv6) [HTTP 400]\n');
});

t.test('a broken answer is reported, not crashed on; an error without a body shows the status', async (t) => {
  const sock = join(dir, 'broken.sock');
  const server = createServer((req, res) =>
    req.url === '/v1/endpoint/1' ? res.writeHead(200, { 'content-type': 'application/json' }).end('{"id": 1,') : res.writeHead(404).end(),
  );
  await new Promise<void>((r) => server.listen(sock, r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const r = await cli(sock, ['endpoint', 'get', '1']);
  t.equal(r.code, 1);
  t.equal(r.stderr, 'cellium: GET /v1/endpoint/1: the agent answered 200 with broken JSON\n');
  const bare = await cli(sock, ['endpoint', 'get', '97']);
  t.equal(bare.code, 1);
  t.equal(bare.stderr, 'cellium: GET /v1/endpoint/97: 404 Not Found [HTTP 404]\n');
});

t.test('usage: unknown commands and options exit 2, help and version exit 0', async (t) => {
  const sock = join(dir, 'unused.sock');
  const unknown = await cli(sock, ['frobnicate']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /unknown command 'frobnicate'/);
  const opt = await cli(sock, ['endpoint', 'list', '--bogus']);
  t.equal(opt.code, 2);
  t.match(opt.stderr, /unknown option '--bogus'/);
  const output = await cli(sock, ['status', '-o', 'xml']);
  t.equal(output.code, 2);
  t.match(output.stderr, /Allowed choices are table, json/);
  const help = await cli(sock, ['policy', '--help']);
  t.equal(help.code, 0);
  for (const c of ['get', 'import', 'delete', 'selectors', 'trace']) t.match(help.stdout, new RegExp(`^  ${c}\\b`, 'm'));
  const top = await cli(sock, ['--help']);
  for (const c of ['status', 'endpoint', 'identity', 'policy', 'ipam', 'map', 'config']) t.match(top.stdout, new RegExp(`^  ${c}\\b`, 'm'), c);
  t.equal((await cli(sock, ['--version'])).stdout, '0.1.0\n');
});

t.test('-H talks to an agent API on TCP', async (t) => {
  const server = createServer((req, res) => {
    t.equal(req.url, '/v1/map');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(fx.mapList));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as { port: number }).port;
  const r = await cli(join(dir, 'unused.sock'), ['-H', `http://127.0.0.1:${port}`, 'map', 'list', '-o', 'json']);
  t.equal(r.code, 0);
  t.same(JSON.parse(r.stdout), fx.mapList);
  server.close();
  await new Promise((r) => setTimeout(r, 20));
  const down = await cli(join(dir, 'unused.sock'), ['-H', `http://127.0.0.1:${port}`, 'map', 'list']);
  t.match(down.stderr, `cannot reach the cellium agent at http://127.0.0.1:${port} (ECONNREFUSED`);
  t.match(down.stderr, `start the agent with \`cellium-agent --api-listen-address 127.0.0.1:${port} --api-token-file FILE\``);
});

const launcher = resolve(import.meta.dirname, '../../bin/cellium.js');
const built = existsSync(resolve(import.meta.dirname, '../../dist/src/cli/main.js'));

t.test('bin/cellium.js exits 1 with one line when the agent is unreachable', { skip: built ? false : 'needs the build (npm run build): bin/cellium.js runs dist/' }, async (t) => {
  const sock = join(dir, 'bin.sock');
  const err = await promisify(execFile)(process.execPath, [launcher, '--socket-path', sock, 'status']).then(
    () => undefined,
    (e: { code: number; stderr: string; stdout: string }) => e,
  );
  t.equal(err?.code, 1);
  t.equal(err?.stdout, '');
  t.match(err?.stderr, new RegExp(`^cellium: cannot reach the cellium agent at unix socket ${sock} \\(ENOENT: no such socket\\); start the agent with \`cellium-agent --socket-path ${sock}\`\\n$`));
});

t.test('status --wait: until the agent is up and Ok; gives up after --wait-timeout', async (t) => {
  const warning = { ...fx.statusResponse, cilium: { state: 'Warning' as const, msg: 'starting' } };
  const agent = await startFakeAgent(t, { GetHealthz: (_req, n) => ({ status: 200, body: n < 3 ? warning : fx.statusResponse }) });
  const r = await cli(agent.socketPath, ['status', '--wait', '-o', 'json']);
  t.equal(r.code, 0);
  t.equal(r.stderr, 'waiting for the agent: state Warning (starting)\n');
  t.same(JSON.parse(r.stdout), fx.statusResponse);
  const sock = join(dir, 'later.sock');
  const gone = await cli(sock, ['status', '--wait', '--wait-timeout', '300ms']);
  t.equal(gone.code, 1);
  t.equal(gone.stderr, `waiting for the agent at unix socket ${sock}: ENOENT\ncellium: the agent was not ready within 0.3s (at unix socket ${sock}: ENOENT)\n`);
});

t.test('--timeout: a hung agent fails after that long', async (t) => {
  const sock = join(dir, 'hung.sock');
  const server = createServer(() => undefined);
  await new Promise<void>((r) => server.listen(sock, r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const r = await cli(sock, ['--timeout', '200ms', 'map', 'list']);
  t.equal(r.code, 1);
  t.equal(r.stderr, `cellium: GET /v1/map: no answer from the agent at unix socket ${sock} within 200 ms\n`);
  const bad = await cli(sock, ['--timeout', 'soon', 'map', 'list']);
  t.equal(bad.code, 2);
});
