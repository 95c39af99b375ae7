// The cellium-cni binary run as a container runtime runs it: VERSION, malformed calls and their CNI
// error codes, the hostile table (its own checks, before any request), an unreachable agent (codes,
// the DEL queue), forwarding to a fake agent, and what each kind of answer becomes (only "no
// answer" is code 11).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import {
  CNI_EXIT_CODE_HEADER,
  CNI_REQUEST_PATH,
  cniError,
  cniSuccess,
  decodeCniRequest,
  writeCniResponse,
} from '../../src/cni/protocol.js';
import { baseRequest, hostileCases, type HostileContext } from '../cni-server/hostile-cases.js';
import { buildShim, leaveStaleSocket, runShim, startFakeAgent, tempDir } from './run-shim.js';

buildShim();

const tmp = tempDir('cellium-shim-');
t.teardown(tmp.cleanup);
const deadSocket = join(tmp.dir, 'nobody.sock');

/** A netconf text for the shim's stdin. */
function netconf(extra: Record<string, unknown> = {}, version = '1.0.0'): string {
  return JSON.stringify({ cniVersion: version, name: 'cellium', type: 'cellium-cni', 'socket-path': deadSocket, ...extra });
}

const addEnv = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c0ffee',
  CNI_NETNS: '/proc/self/ns/net', // from the shim's side, a network namespace
  CNI_IFNAME: 'eth0',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=p',
  CNI_PATH: '/opt/cni/bin',
};

/** Runs the shim and checks it failed with a CNI error of `code`; returns the parsed error. */
async function expectCniError(
  tt: Test,
  env: Record<string, string>,
  stdin: string,
  code: number,
): Promise<Record<string, unknown>> {
  const run = await runShim(env, stdin);
  tt.equal(run.code, 1, 'exit code 1');
  const err = JSON.parse(run.stdout) as Record<string, unknown>;
  tt.equal(err.code, code, `CNI error code ${code}`);
  tt.same(Object.keys(err), ['cniVersion', 'code', 'msg', 'details'], 'error result keys');
  tt.type(err.msg, 'string');
  return err;
}

t.test('VERSION', async (t) => {
  for (const v of ['0.3.1', '0.4.0', '1.0.0', '1.1.0']) {
    const run = await runShim({ CNI_COMMAND: 'VERSION' }, JSON.stringify({ cniVersion: v }));
    t.equal(run.code, 0, `exit 0 for ${v}`);
    t.same(JSON.parse(run.stdout), { cniVersion: v, supportedVersions: ['0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
  }
  const unknown = await runShim({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.2.0"}');
  t.equal(JSON.parse(unknown.stdout).cniVersion, '1.1.0', 'an unsupported request is answered in 1.1.0');
  const empty = await runShim({ CNI_COMMAND: 'VERSION' }, '');
  t.equal(empty.code, 0, 'VERSION without stdin still answers');
  t.equal(JSON.parse(empty.stdout).cniVersion, '1.1.0');
});

t.test('malformed calls get the spec error codes', async (t) => {
  let err = await expectCniError(t, {}, netconf(), 7);
  t.match(err.msg, /CNI_COMMAND/);
  t.equal(err.cniVersion, '1.0.0', 'the error echoes the requested cniVersion');
  err = await expectCniError(t, { ...addEnv, CNI_COMMAND: 'FROB' }, netconf(), 7);
  t.match(err.msg, /CNI_COMMAND: "FROB" is not a CNI command/);
  for (const name of ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME']) {
    const env: Record<string, string> = { ...addEnv };
    delete env[name];
    err = await expectCniError(t, env, netconf(), 7);
    t.match(err.msg, name, `ADD without ${name}`);
  }
  err = await expectCniError(t, { ...addEnv, CNI_COMMAND: 'CHECK', CNI_NETNS: '' }, netconf(), 7);
  t.match(err.msg, 'CNI_NETNS', 'CHECK needs CNI_NETNS too');
  err = await expectCniError(t, { ...addEnv, CNI_COMMAND: 'DEL', CNI_IFNAME: '' }, netconf(), 7);
  t.match(err.msg, 'CNI_IFNAME');

  await expectCniError(t, addEnv, 'not json', 6);
  await expectCniError(t, addEnv, '', 6);
  await expectCniError(t, addEnv, '[1,2]', 6);
  await expectCniError(t, addEnv, '{"cniVersion":"1.0.0","name":"x","type":"y"} trailing', 6);
  await expectCniError(t, addEnv, '{"cniVersion":"1.0.0","name":"x\u0001"}', 6);
  await expectCniError(t, addEnv, `${'['.repeat(300)}`, 6);

  err = await expectCniError(t, addEnv, netconf({}, '0.2.0'), 1);
  t.match(err.details, '0.2.0');
  await expectCniError(t, addEnv, JSON.stringify({ name: 'n', type: 't' }), 1);
  await expectCniError(t, addEnv, JSON.stringify({ cniVersion: 1, name: 'n', type: 't' }), 1);
  err = await expectCniError(t, { CNI_COMMAND: 'STATUS' }, netconf({}, '1.0.0'), 1);
  t.match(err.details, 'STATUS', 'STATUS needs cniVersion 1.1.0');
  await expectCniError(t, { CNI_COMMAND: 'GC' }, netconf({}, '0.4.0'), 1);

  // an invalid network configuration is the spec's code 7
  err = await expectCniError(t, addEnv, netconf({ name: undefined }), 7);
  t.match(err.msg, 'name');
  err = await expectCniError(t, addEnv, netconf({ type: 7 }), 7);
  t.match(err.msg, 'type');
  await expectCniError(t, addEnv, netconf({ 'socket-path': 42 }), 7);
  await expectCniError(t, addEnv, netconf({ 'socket-path': `/${'x'.repeat(200)}` }), 7);
  err = await expectCniError(t, addEnv, netconf({ padding: 'p'.repeat(17 << 20) }), 7);
  t.match(err.msg, 'network configuration too large: more than 16777216 bytes, limit 16777216');
});

t.test('unreachable agent', async (t) => {
  for (const command of ['ADD', 'CHECK']) {
    const err = await expectCniError(t, { ...addEnv, CNI_COMMAND: command }, netconf(), 11);
    t.match(err.msg, deadSocket, `${command} names the socket`);
  }
  for (const command of ['STATUS', 'GC']) {
    await expectCniError(t, { CNI_COMMAND: command }, netconf({}, '1.1.0'), 11);
  }
  // A socket file nobody listens on, as an agent killed with SIGKILL leaves it: connection refused.
  const stale = join(tmp.dir, 'stale.sock');
  await leaveStaleSocket(stale);
  t.ok(existsSync(stale), 'the stale socket file exists');
  const err = await expectCniError(t, addEnv, netconf({ 'socket-path': stale }), 11);
  t.match(err.msg, stale);
});

t.test('DEL with the agent unreachable is queued and succeeds', async (t) => {
  const queue = join(tmp.dir, 'queue', 'nested');
  const stdin = netconf({ prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }] } });
  const env = { ...addEnv, CNI_COMMAND: 'DEL', CNI_NETNS: '', CNI_CONTAINERID: 'abc.-_123', CELLIUM_CNI_DELETE_QUEUE: queue };
  const run = await runShim(env, stdin);
  t.equal(run.code, 0, 'exit 0');
  t.equal(run.stdout, '', 'no output');
  const files = readdirSync(queue);
  t.equal(files.length, 1, 'one queued file');
  t.match(files[0], /^\d{19}-\d+-abc\.-_123\.json$/, 'named <ns>-<pid>-<container id>.json');
  const queued = decodeCniRequest(readFileSync(join(queue, files[0])));
  t.same(queued, {
    command: 'DEL',
    containerId: 'abc.-_123',
    netns: '',
    ifName: 'eth0',
    args: addEnv.CNI_ARGS,
    path: addEnv.CNI_PATH,
    stdin,
  });
  const second = await runShim(env, stdin);
  t.equal(second.code, 0, 'a second DEL is queued too');
  t.equal(readdirSync(queue).length, 2);

  const blocked = join(tmp.dir, 'file-not-dir');
  writeFileSync(blocked, '');
  const err = await expectCniError(t, { ...env, CELLIUM_CNI_DELETE_QUEUE: blocked }, stdin, 11);
  t.match(err.details, 'queueing the DEL failed', 'a failed queue write is an error');
});

t.test('forwarding to the agent', async (t) => {
  const socketPath = join(tmp.dir, 'agent.sock');
  const replies: Array<(res: import('node:http').ServerResponse) => void> = [];
  const agent = await startFakeAgent(socketPath, (_req, res) => {
    const reply = replies.shift();
    if (reply) reply(res);
    else writeCniResponse(res, cniError('1.0.0', 999, 'unexpected call'));
  });
  t.teardown(agent.close);
  const stdin = netconf({ 'socket-path': socketPath, note: 'quotes " and \\ and ünïcode \u2603 and \n' });

  const result = { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: '/var/run/netns/test' }], ips: [] };
  replies.push((res) => writeCniResponse(res, cniSuccess(result)));
  let run = await runShim(addEnv, stdin);
  t.equal(run.code, 0, 'exit code from the header');
  t.same(JSON.parse(run.stdout), result, 'stdout is the response body');
  const seen = agent.seen.at(-1)!;
  t.equal(seen.method, 'POST');
  t.equal(seen.url, CNI_REQUEST_PATH);
  t.match(seen.headers['content-type'], 'application/json');
  t.same(JSON.parse(seen.body), {
    command: 'ADD',
    containerId: addEnv.CNI_CONTAINERID,
    netns: addEnv.CNI_NETNS,
    ifName: 'eth0',
    args: addEnv.CNI_ARGS,
    path: addEnv.CNI_PATH,
    stdin,
  }, 'the body carries env and stdin byte for byte');

  replies.push((res) => writeCniResponse(res, cniError('1.0.0', 3, 'no such container', 'c0ffee')));
  run = await runShim({ ...addEnv, CNI_COMMAND: 'CHECK' }, stdin);
  t.equal(run.code, 1);
  t.same(JSON.parse(run.stdout), { cniVersion: '1.0.0', code: 3, msg: 'no such container', details: 'c0ffee' });
  t.equal(JSON.parse(agent.seen.at(-1)!.body).command, 'CHECK');

  replies.push((res) => {
    res.writeHead(200, { [CNI_EXIT_CODE_HEADER]: '42' });
    res.write('chunked ');
    res.end('answer');
  });
  run = await runShim({ CNI_COMMAND: 'STATUS' }, netconf({ 'socket-path': socketPath }, '1.1.0'));
  t.equal(run.code, 42, 'any exit code 0..255 passes through');
  t.equal(run.stdout, 'chunked answer', 'a chunked body is decoded');

  replies.push((res) => writeCniResponse(res, { exitCode: 0, body: '' }));
  run = await runShim({ ...addEnv, CNI_COMMAND: 'DEL' }, stdin);
  t.equal(run.code, 0);
  t.equal(run.stdout, '');

  // an answer the agent gave is never "try again later" (11): code 5 with the agent's message
  replies.push((res) => {
    res.writeHead(500);
    res.end('boom');
  });
  let err = await expectCniError(t, addEnv, stdin, 5);
  t.match(err.msg, 'cellium agent refused the request: HTTP 500: boom');
  replies.push((res) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify('the body "x" is \n bad'));
  });
  err = await expectCniError(t, addEnv, stdin, 5);
  t.match(err.msg, 'HTTP 400: the body "x" is   bad', "a JSON string body is the agent's message");

  replies.push((res) => {
    res.writeHead(200);
    res.end('{}');
  });
  err = await expectCniError(t, addEnv, stdin, 5);
  t.match(err.details, CNI_EXIT_CODE_HEADER, 'an answer without the exit code header is refused');

  replies.push((res) => {
    res.writeHead(429, { 'retry-after': '1' });
    res.end('"busy"');
  });
  err = await expectCniError(t, addEnv, stdin, 11);
  t.match(err.msg, 'busy, try again later', '429 asks to try again');

  replies.push((res) => res.socket?.destroy());
  err = await expectCniError(t, addEnv, stdin, 11);
  t.match(err.msg, 'did not answer', 'a connection closed without an answer (agent killed mid-call) is try-again');

  replies.push((res) => {
    res.writeHead(503);
    res.end('starting');
  });
  await expectCniError(t, addEnv, stdin, 11);

  const queue = join(tmp.dir, 'queue-503');
  replies.push((res) => {
    res.writeHead(503);
    res.end('starting');
  });
  run = await runShim({ ...addEnv, CNI_COMMAND: 'DEL', CELLIUM_CNI_DELETE_QUEUE: queue }, stdin);
  t.equal(run.code, 0, 'DEL answered 503 is queued');
  t.equal(existsSync(queue) && readdirSync(queue).length, 1);

  replies.push(() => undefined); // never answers
  err = await expectCniError(t, { ...addEnv, CELLIUM_CNI_RESPONSE_TIMEOUT_MS: '300' }, stdin, 11);
  t.match(err.details, /within 300 ms/, 'a silent agent times out instead of hanging');
});

t.test('413: the agent answers before reading a huge body and closes; the shim reports it, not code 11', async (t) => {
  const socketPath = join(tmp.dir, 'early.sock');
  // as the agent's API server does: answer once the headers are in, never read the body, close
  const server = createNetServer((sock) => {
    let head = '';
    sock.on('data', (c: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      const body = JSON.stringify('the request body exceeds 2097152 bytes (--api-max-body-bytes)');
      sock.end(`HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nX-Cellium-Max-Body-Bytes: 2097152\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      setTimeout(() => sock.destroy(), 20);
    });
    sock.on('error', () => undefined);
  });
  await new Promise<void>((ok) => server.listen(socketPath, ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  const stdin = netconf({ 'socket-path': socketPath, padding: 'p'.repeat(3 << 20) });
  const err = await expectCniError(t, addEnv, stdin, 7);
  const m = /^network configuration too large: (\d+) bytes, limit 2097152$/.exec(String(err.msg));
  t.ok(m, `message: ${String(err.msg)}`);
  t.ok(Number(m?.[1]) > stdin.length, 'N is the size of the request carrying the netconf');
  t.match(err.details, `the ${stdin.length}-byte network configuration`, 'details: the netconf size and the way out');
  t.match(err.details, /--api-max-body-bytes/);
});

t.test('the hostile table through the shim: its own checks refuse before any request, the rest reaches the agent', async (t) => {
  const socketPath = join(tmp.dir, 'hostile.sock');
  const agent = await startFakeAgent(socketPath, (_req, res) => writeCniResponse(res, cniError('1.0.0', 99, 'forwarded to the agent')));
  t.teardown(agent.close);
  const fifo = join(tmp.dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const ctx: HostileContext = {
    pod: '/proc/self/ns/net', // from the shim's side: a network namespace (the agent would refuse its own)
    own: '/proc/self/ns/net',
    missing: join(tmp.dir, 'no-such-netns'),
    fifo,
    dir: tmp.dir,
    netconf: (extra = {}, version = '1.0.0') => JSON.stringify({ cniVersion: version, name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath, ...extra }),
  };
  for (const c of hostileCases(ctx).filter((x) => !x.needsApiServer)) {
    const before = agent.seen.length;
    const req = baseRequest(ctx, c.command, c.req);
    const env: Record<string, string> = { CNI_COMMAND: req.command, CNI_CONTAINERID: req.containerId, CNI_NETNS: req.netns, CNI_IFNAME: req.ifName, CNI_ARGS: req.args, CNI_PATH: req.path };
    const run = await runShim(env, req.stdin);
    const out = JSON.parse(run.stdout) as { code: number; msg: string };
    if (c.agentDecides) {
      t.equal(agent.seen.length, before + 1, `${c.name}: forwarded (only the agent can tell)`);
      t.equal(out.code, 99, `${c.name}: the agent's answer is printed`);
    } else {
      t.equal(agent.seen.length, before, `${c.name}: refused by the shim, nothing sent`);
      t.same([run.code, out.code], [1, c.code], `${c.name}: code ${c.code}`);
      t.match(out.msg, c.msg, `${c.name}: ${out.msg.slice(0, 140)}`);
    }
  }
});
