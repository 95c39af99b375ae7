// The TypeScript side of the shim <-> agent contract: request decoding, answers, CNI_ARGS, the client.
import { join } from 'node:path';
import t from 'tap';
import {
  CniErrorCode,
  CniProtocolError,
  type CniRequest,
  cniEmptySuccess,
  cniError,
  cniSuccess,
  decodeCniRequest,
  decodeCniResponse,
  encodeCniRequest,
  parseCniArgs,
  replyCniVersion,
  sendCniRequest,
  writeCniResponse,
} from '../../src/cni/protocol.js';
import { startFakeAgent, tempDir } from './run-shim.js';

const req: CniRequest = {
  command: 'ADD',
  containerId: 'id',
  netns: '/proc/1/ns/net',
  ifName: 'eth0',
  args: 'K8S_POD_NAME=a',
  path: '/opt/cni/bin',
  stdin: '{"cniVersion":"1.0.0","name":"n","type":"t"}',
};

t.test('requests round-trip and bad ones are refused', async (t) => {
  t.same(decodeCniRequest(encodeCniRequest(req)), req);
  t.same(decodeCniRequest(Buffer.from(encodeCniRequest(req))), req, 'from a Buffer (a queue file)');
  t.throws(() => decodeCniRequest('{'), CniProtocolError);
  const bad = [
    { ...req, command: 'VERSION' },
    { ...req, netns: null },
    { ...req, extra: 1 },
    (({ stdin: _s, ...rest }) => rest)(req),
  ];
  for (const value of bad) {
    try {
      decodeCniRequest(JSON.stringify(value));
      t.fail('accepted a bad request');
    } catch (err) {
      t.type(err, CniProtocolError);
      t.equal((err as CniProtocolError).cniCode, CniErrorCode.DecodingFailure);
      t.match((err as Error).message, 'does not match the contract');
    }
  }
});

/** The CNI code of the CniProtocolError fn throws, or undefined when it does not throw one. */
function codeOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniProtocolError) return err.cniCode;
  }
  return undefined;
}

t.test('answers', async (t) => {
  t.same(cniSuccess({ a: 1 }), { exitCode: 0, body: '{"a":1}\n' });
  t.same(cniEmptySuccess(), { exitCode: 0, body: '' });
  t.same(JSON.parse(cniError('0.4.0', 11, 'later').body), { cniVersion: '0.4.0', code: 11, msg: 'later', details: '' });
  t.equal(cniError('1.0.0', 4, 'x').exitCode, 1);
  t.same(decodeCniResponse(200, { 'x-cellium-cni-exit-code': '7' }, 'b'), { exitCode: 7, body: 'b' });
  t.equal(codeOf(() => decodeCniResponse(503, {}, '')), CniErrorCode.TryAgainLater, '503: not ready, try again');
  t.equal(codeOf(() => decodeCniResponse(429, {}, '')), CniErrorCode.TryAgainLater, '429: busy, try again');
  t.throws(() => decodeCniResponse(200, {}, ''), /X-Cellium-Cni-Exit-Code/);
  t.equal(codeOf(() => decodeCniResponse(200, {}, '')), CniErrorCode.IoFailure, 'an answer against the contract is not "try again"');
  t.throws(() => decodeCniResponse(200, { 'x-cellium-cni-exit-code': '300' }, ''));
  // an answer the agent did give is a permanent error carrying its message
  t.throws(() => decodeCniResponse(413, { 'x-cellium-max-body-bytes': '2097152' }, '"too big"', 3_000_000), {
    message: 'network configuration too large: 3000000 bytes, limit 2097152',
    cniCode: CniErrorCode.InvalidConfig,
  });
  t.throws(() => decodeCniResponse(400, {}, '"bad body"'), { message: 'agent answered HTTP 400: bad body', cniCode: CniErrorCode.IoFailure });
  t.throws(() => decodeCniResponse(500, {}, 'plain text'), { message: 'agent answered HTTP 500: plain text', cniCode: CniErrorCode.IoFailure });
  t.equal(replyCniVersion('0.4.0'), '0.4.0');
  t.equal(replyCniVersion('0.2.0'), '1.1.0');
  t.equal(replyCniVersion(undefined), '1.1.0');
});

t.test('CNI_ARGS', async (t) => {
  const args = parseCniArgs('IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;;X=');
  t.same([...args.entries()], [['IgnoreUnknown', '1'], ['K8S_POD_NAMESPACE', 'ns'], ['K8S_POD_NAME', 'p'], ['X', '']]);
  t.equal(parseCniArgs('').size, 0);
  for (const bad of ['novalue', '=x', 'X=a=b']) t.equal(codeOf(() => parseCniArgs(bad)), CniErrorCode.InvalidEnv, `${bad}: refused as libcni does`);
});

t.test('sendCniRequest against an agent that uses writeCniResponse', async (t) => {
  const tmp = tempDir('cellium-proto-');
  t.teardown(tmp.cleanup);
  const agent = await startFakeAgent(join(tmp.dir, 'a.sock'), (seen, res) => {
    const got = decodeCniRequest(seen.body);
    writeCniResponse(res, got.command === 'ADD' ? cniSuccess({ got: got.containerId }) : cniError('1.0.0', 3, 'no'));
  });
  t.teardown(agent.close);
  t.same(await sendCniRequest(agent.socketPath, req), { exitCode: 0, body: '{"got":"id"}\n' });
  t.equal((await sendCniRequest(agent.socketPath, { ...req, command: 'DEL' })).exitCode, 1);
  await t.rejects(sendCniRequest(join(tmp.dir, 'none.sock'), req), { code: 'ENOENT' });
  t.throws(() => writeCniResponse({} as never, { exitCode: 256, body: '' }), CniProtocolError);
});
