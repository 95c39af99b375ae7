// Unprivileged: the CNI variable validators (what they accept, what they refuse and how they say
// it), and the hostile table (hostile-cases.ts) through the CNI server over a FakeNet: each call gets
// its code and message, and nothing is created (no endpoint, no link, no IP, no ledger entry).
import t from 'tap';
import { quoteValue } from '../../src/cells/cni-server/errors.js';
import { argValueProblem, argsProblem, containerIdProblem, ifNameProblem, netnsPathProblem, validateEnv } from '../../src/cells/cni-server/validate.js';
import { CniFailure } from '../../src/cells/cni-server/index.js';
import { baseRequest, hostileCases, type HostileContext } from './hostile-cases.js';
import { body, cniReq, netconf, rig, type Rig } from './helpers.js';

t.test('interface names: the accepted set', async (t) => {
  for (const ok of ['eth0', 'net1', 'eth0.100', 'veth-a_1', 'a'.repeat(15), 'E', '0', 'lo']) t.equal(ifNameProblem(ok), undefined, `${ok} accepted`);
  const refused: Array<[string, RegExp]> = [
    ['', /is empty/],
    ['.', /"\." or "\.\."/],
    ['..', /"\." or "\.\."/],
    ['a'.repeat(16), /16 bytes long/],
    ['\u00e9'.repeat(8), /16 bytes long/], // 8 characters, 16 bytes: the kernel counts bytes
    ['eth0/1', /contains "\/"/],
    ['eth0:1', /contains ":"/],
    ['eth\t0', /control character U\+0009/],
    ['eth\u202e0', /non-ASCII character U\+202E/],
    ['_eth0', /starts with "_"/],
    ['.eth0', /starts with "\."/],
    ['-rf', /starts with "-"/],
    ['eth%d', /contains "%"/],
  ];
  for (const [v, why] of refused) t.match(ifNameProblem(v), why, `${JSON.stringify(v)} refused`);
});

t.test('container ids: libcni pattern and 128 characters', async (t) => {
  for (const ok of ['a', 'f'.repeat(64), 'x'.repeat(128), 'cnitool-77383ca0a0715733ca6f', 'pod_1.2-3']) t.equal(containerIdProblem(ok), undefined, `${ok.slice(0, 20)} accepted`);
  t.match(containerIdProblem('x'.repeat(129)), /129 characters long, at most 128/);
  t.match(containerIdProblem('a b'), /contains a space/);
  t.match(containerIdProblem('_a'), /starts with "_"/);
});

t.test('netns paths, CNI_ARGS and the K8S values', async (t) => {
  t.equal(netnsPathProblem('/var/run/netns/a b'), undefined, 'a space is a valid path character');
  t.match(netnsPathProblem('x'), /not an absolute path/);
  t.match(netnsPathProblem(`/${'a'.repeat(5000)}`), /5001 bytes long, at most 4095/);
  t.match(netnsPathProblem('/a\u0000b'), /control character U\+0000/);
  t.equal(argsProblem(''), undefined);
  t.equal(argsProblem(';;IgnoreUnknown=1;;K8S_POD_NAME=x;'), undefined, 'empty pairs are skipped');
  t.equal(argsProblem('A='), undefined, 'an empty value is a value');
  t.match(argsProblem('A'), /without "="/);
  t.match(argsProblem('A=1=2'), /more than one "="/);
  t.equal(argValueProblem('K8S_POD_NAME', 'My_Container.1'), undefined, "podman's container names are pod names");
  t.equal(argValueProblem('K8S_POD_UID', '0b9e7b84-1c5e-4d8f-9d2e-0f3a7c1b2d4e'), undefined);
  t.equal(argValueProblem('OTHER', '$(id)'), undefined, 'keys Cellium does not use are not judged');
  t.match(argValueProblem('K8S_POD_NAMESPACE', 'n'.repeat(64)), /64 characters long.*1-63/);
});

t.test('quoted values are escaped and shortened', async (t) => {
  t.equal(quoteValue('eth0'), '"eth0"');
  t.equal(quoteValue('a"b\\c'), '"a\\"b\\\\c"');
  t.equal(quoteValue('x\ny\u202e'), '"x\\u000ay\\u202e"');
  t.equal(quoteValue('z'.repeat(100)), `"${'z'.repeat(64)}..." (100 characters)`);
});

t.test('validateEnv: STATUS and GC ignore the variables; each failure is a code-7 CniFailure', async (t) => {
  t.doesNotThrow(() => validateEnv(cniReq('STATUS', { containerId: '$(id)', ifName: '..', netns: 'x' })));
  t.doesNotThrow(() => validateEnv(cniReq('GC', { containerId: '', ifName: '', netns: '' })));
  t.doesNotThrow(() => validateEnv(cniReq('DEL', { netns: '' })), 'DEL may come without CNI_NETNS');
  try {
    validateEnv(cniReq('ADD', { containerId: '', netns: '' }));
    t.fail('accepted');
  } catch (err) {
    t.type(err, CniFailure);
    t.equal((err as CniFailure).code, 7);
    t.equal((err as Error).message, 'required env variables [CNI_CONTAINERID CNI_NETNS] missing', "skel's words");
  }
});

/** The FakeNet context: the fake's namespaces, and files for the paths that are not namespaces. */
function fakeContext(r: Rig): HostileContext {
  const pod = '/run/netns/hostile';
  r.net.addNetns(pod);
  const files: Record<string, string> = { '/etc/passwd': 'a regular file', '/': 'a directory', '/dev/null': 'a character device', '/run/fifo': 'a FIFO', '/var/run/netns': 'a directory' };
  for (const [path, what] of Object.entries(files)) r.net.files.set(path, what);
  return { pod, own: r.net.ownNetns, missing: '/run/netns/none-such', fifo: '/run/fifo', dir: '/var/run/netns', netconf };
}

t.test('the hostile table through the CNI server: each call refused with its code, nothing created', async (t) => {
  const r = await rig(t);
  const ctx = fakeContext(r);
  const cases = hostileCases(ctx).filter((c) => !c.shimOnly && !c.needsApiServer);
  t.ok(cases.length > 50, `${cases.length} cases`);
  for (const c of cases) {
    const resp = await r.server.handle(baseRequest(ctx, c.command, c.req));
    t.equal(resp.exitCode, 1, `${c.name}: exit 1`);
    const err = body(resp) as { code: number; msg: string; cniVersion: string };
    t.equal(err.code, c.code, `${c.name}: code ${c.code}`);
    t.match(err.msg, c.msg, `${c.name}: ${err.msg.slice(0, 160)}`);
  }
  t.equal(r.deps.manager.getEndpoints().length, 0, 'no endpoint');
  t.same([...r.net.hostNs.links.keys()], ['lo'], 'no host link');
  t.same([...r.net.namespaces.get(ctx.pod)!.links.keys()], ['lo'], 'nothing in the pod');
  t.same(r.deps.ipam.status()[0]!.allocated, {}, 'no IP');
  t.same(r.deps.ledger.all(), [], 'no ledger entry');
  const ok = await r.server.handle(baseRequest(ctx, 'ADD'));
  t.equal(ok.exitCode, 0, `a valid ADD still works afterwards: ${ok.body}`);
});

t.test('an existing interface: refused for a plain ADD, fine for a repeated ADD, CHECK and a chained ADD', async (t) => {
  const r = await rig(t);
  const ctx = fakeContext(r);
  const first = await r.server.handle(baseRequest(ctx, 'ADD'));
  t.equal(first.exitCode, 0, first.body);
  const again = await r.server.handle(baseRequest(ctx, 'ADD'));
  t.equal(again.exitCode, 0, 'the same attachment again replaces its own interface');
  const check = await r.server.handle(baseRequest(ctx, 'CHECK', { stdin: netconf({ prevResult: body(again) }) }));
  t.same(check, { exitCode: 0, body: '' }, 'CHECK names the interface the ADD made');
  const other = await r.server.handle(baseRequest(ctx, 'ADD', { containerId: 'hostile-1' }));
  t.match(body(other), { code: 7, msg: /CNI_IFNAME: "eth0" already exists in \/run\/netns\/hostile \(index \d+, a veth\)/ }, "another container's plain ADD cannot take it");
  t.equal(r.deps.manager.getEndpoints().length, 1, 'and created no endpoint');
  t.equal(r.net.hostNs.links.size, 2, 'nor a link (lo and the first lxc)');

  // another plugin made net1: a plain ADD refuses it, an ADD chained onto it attaches
  const ns = r.net.addNetns('/run/netns/chain');
  const host = await r.net.host().createVeth({ name: 'vethprev', peerName: 'net1', peerNetns: '/run/netns/chain' });
  ns.links.get('net1')!.addrs.push('10.88.0.9/16');
  const plain = await r.server.handle(baseRequest(ctx, 'ADD', { containerId: 'chain', netns: '/run/netns/chain', ifName: 'net1' }));
  t.match(body(plain), { code: 7, msg: /"net1" already exists/ });
  const prevResult = { cniVersion: '1.0.0', interfaces: [{ name: 'net1', mac: ns.links.get('net1')!.mac, sandbox: '/run/netns/chain' }], ips: [{ address: '10.88.0.9/16', interface: 0 }] };
  const chained = await r.server.handle(baseRequest(ctx, 'ADD', { containerId: 'chain', netns: '/run/netns/chain', ifName: 'net1', stdin: netconf({ prevResult }) }));
  t.equal(chained.exitCode, 0, chained.body);
  t.equal(r.deps.manager.lookup('cni-attachment-id:chain:net1')?.ifName, host.name);
});
