// Privileged, BPF datapath (issue 28 point 5): `cellium explain` on real drops between pods in
// network namespaces, the whole agent in this process with --enable-hubble, the CLI finding each
// drop in the agent's Hubble ring over the Observer API. A policy drop (the server admits 80/TCP
// from the client only; the client tries 81): explained with the selecting rule, its proposal
// imported with --apply --yes, then the same traffic passes while the unrelated pod and another
// port stay denied. A deny rule: explained, nothing proposed, nothing to apply. A service without
// backends and a forged source address: their non-policy reasons, nothing to apply. With the real
// hubble CLI built, its `observe -o json` output explains from a file too.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { CelliumExplanation } from '../../src/api/models.js';
import { ServiceManagerToken } from '../../src/cells/loadbalancer/index.js';
import { exchange, ip } from '../bpf/fixtures/topology.js';
import { fe, svc } from '../loadbalancer/helpers.js';
import { needs } from '../needs.js';
import { SMALL_CT, appPolicy, peerPorts } from './ct-fixtures.js';
import { Cleanup, allocatePod, bpfRoot, cli, connects, endpointRequest, skipReason, startBpfAgent, tempDir, until } from './fixtures.js';

const POOL = '10.232.5.0/24';
const EMPTY_VIP = '10.161.98.21';
const run = promisify(execFile);

t.test('cellium explain on real drops: policy (proposal applied), deny rule, no backend, forged source', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const dir = tempDir(c, 'agent');
  const hsock = join(dir, 'hubble.sock');
  const agent = await startBpfAgent(c, root, POOL, { ...SMALL_CT, 'enable-hubble': true, 'hubble-event-buffer-capacity': 1023, 'hubble-socket-path': hsock }, dir);
  const explain = (...args: string[]) => cli(agent.socketPath, 'explain', '--hubble-server', `unix://${hsock}`, ...args);
  const explained = async (...args: string[]): Promise<CelliumExplanation> => {
    const r = await explain('-o', 'json', ...args);
    if (r.code !== 0) throw new Error(`cellium explain ${args.join(' ')}: exit ${r.code}: ${r.err}`);
    return JSON.parse(r.out) as CelliumExplanation;
  };

  const client = await allocatePod(c, agent.client, 'eclient');
  const srv = await allocatePod(c, agent.client, 'eserver');
  const other = await allocatePod(c, agent.client, 'eother');
  const bad = await allocatePod(c, agent.client, 'ebad');
  for (const [p, app] of [[client, 'eclient'], [srv, 'eserver'], [other, 'eother'], [bad, 'ebad']] as const) await agent.client.createEndpoint(0, endpointRequest(p, [`k8s:app=${app}`]));
  const pol = await cli(agent.socketPath, 'policy', 'import', appPolicy(agent.dir, 'eserver', 'eserver', { ingress: [peerPorts('fromEndpoints', 'eclient', ['80/TCP', '5353/UDP'])] }), '--wait');
  t.equal(pol.code, 0, pol.err);

  // 1. a policy drop: client -> server 81/TCP
  t.ok(await connects(client, srv, 80), 'client -> server 80 is allowed');
  t.notOk(await connects(client, srv, 81), 'client -> server 81 is dropped');
  t.notOk(await connects(other, srv, 81), 'other -> server 81 is dropped too (the unrelated flow)');
  let e: CelliumExplanation | undefined;
  t.ok(await until(async () => (e = await explained('--from', 'default/eclient', '--to', 'default/eserver').catch(() => undefined))?.flow.port === 81, 5000, 100), 'the drop is in the ring');
  t.match(e, {
    reason: { code: 133, name: 'POLICY_DENIED', kind: 'policy' },
    flow: { protocol: 'TCP', port: 81, source: { pod: 'default/eclient', ip: client.ip }, destination: { pod: 'default/eserver', ip: srv.ip } },
    policy: { verdict: 'denied', egress: { verdict: 'allowed', decision: 'not-enforced' }, ingress: { verdict: 'denied', decision: 'default-deny', sections: [{ peerMatches: true, portMatches: false }] } },
    proposal: { format: 'cilium', check: { verdict: 'allowed' }, objects: [{ kind: 'CiliumNetworkPolicy', metadata: { namespace: 'default' }, spec: {
      endpointSelector: { matchLabels: { app: 'eserver' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'eclient', 'k8s:io.kubernetes.pod.namespace': 'default' } }], toPorts: [{ ports: [{ port: '81', protocol: 'TCP' }] }] }],
    } }] },
  }, 'the policy drop: the ingress rule that selects the server, and a checked proposal', { e });
  const byId = await explained('--flow-id', e!.flow.uuid!);
  t.same(byId.flow, e!.flow, '--flow-id finds the same flow in the ring');
  const human = await explain('--from', 'default/eclient', '--to', 'default/eserver');
  t.equal(human.code, 0, human.err);
  t.match(human.out, /Drop reason:\s+POLICY_DENIED \(133\)/);
  t.match(human.out, /Ingress at the destination \(default\/eserver.*\): DENIED/);
  t.match(human.out, /\/spec\/ingress\/0 allows from .* on 80\/TCP, 5353\/UDP: the peer matches, but 81\/TCP is not among/);
  t.match(human.out, /Proposed CiliumNetworkPolicy \(checked: the policy trace with it added allows the flow\):\n---\napiVersion: cilium.io\/v2/);
  const k8s = await explained('--from', 'default/eclient', '--to', 'default/eserver', '--format', 'k8s');
  t.match(k8s.proposal, { format: 'k8s', check: { verdict: 'allowed' }, objects: [{ kind: 'NetworkPolicy', spec: { podSelector: { matchLabels: { app: 'eserver' } } } }] }, '--format k8s: a NetworkPolicy');

  // --apply --yes: the diff, the import, every endpoint enforcing it; then the same traffic passes
  const applied = await explain('--from', 'default/eclient', '--to', 'default/eserver', '--apply', '--yes');
  t.equal(applied.code, 0, applied.err);
  t.match(applied.err, /--- policy repository \(revision \d+, 1 rule\)\n\+\+\+ with the proposed policy\n\+apiVersion: cilium.io\/v2/, 'the diff on stderr');
  t.match(applied.err, /Imported: policy revision \d+, enforced by every endpoint/);
  t.ok(await connects(client, srv, 81), 'client -> server 81 now connects');
  t.notOk(await connects(other, srv, 81), 'other -> server 81 stays denied');
  t.notOk(await connects(client, srv, 82), 'client -> server 82 stays denied');
  t.ok(await connects(client, srv, 80), 'client -> server 80 still allowed');

  // 2. a deny rule wins: nothing proposed, nothing to apply
  const deny = await cli(agent.socketPath, 'policy', 'import', appPolicy(agent.dir, 'no-other', 'eserver', { ingressDeny: [peerPorts('fromEndpoints', 'eother', ['80/TCP'])], ingress: [peerPorts('fromEndpoints', 'eother', ['80/TCP'])] }), '--wait');
  t.equal(deny.code, 0, deny.err);
  t.notOk(await connects(other, srv, 80), 'other -> server 80: denied by the deny rule');
  let d: CelliumExplanation | undefined;
  t.ok(await until(async () => (d = await explained('--from', 'default/eother', '--to', 'default/eserver').catch(() => undefined))?.flow.port === 80, 5000, 100));
  t.match(d, { reason: { name: 'POLICY_DENY', code: 181 }, policy: { ingress: { decision: 'deny-rule', rules: [/policy\.name=no-other/] } }, noProposal: /still denies the flow \(deny rule .*no-other/, rejected: { check: { verdict: 'denied' } } }, 'the deny rule', { d });
  t.notOk(d?.proposal);
  const noApply = await explain('--from', 'default/eother', '--to', 'default/eserver', '--apply', '--yes');
  t.equal(noApply.code, 1);
  t.match(noApply.err, /cellium: nothing to apply: the trace with the proposed policy added still denies/);

  // 3. a service without backends
  const mgr = agent.h.get(ServiceManagerToken);
  mgr.upsert({ service: svc('default/empty'), frontends: [fe(EMPTY_VIP, 80)], backends: [] });
  t.ok(await until(() => mgr.status().pending === 0 && mgr.status().done > 0, 5000, 50), 'the frontend is in the LB maps');
  const id = client.traffic.nextId();
  client.traffic.command(`connect ${EMPTY_VIP} 80 - 600 ${id}`);
  t.equal(await client.traffic.waitFor(['connected', 'failed'], id, 5000), 'failed', 'no backend: the connection fails');
  let s: CelliumExplanation | undefined;
  t.ok(await until(async () => !!(s = await explained('--to-service', 'default/empty').catch(() => undefined)), 5000, 100), 'the no-backend drop is in the ring');
  t.match(s, {
    reason: { code: 158, name: 'SERVICE_BACKEND_NOT_FOUND', kind: 'service' }, flow: { service: 'default/empty', port: 80, destination: { ip: EMPTY_VIP } },
    decision: `the load balancer dropped it: service default/empty has no active backend for ${EMPTY_VIP}:80/TCP`,
    details: [new RegExp(`service default/empty: frontend ${EMPTY_VIP.replace(/\./g, '\\.')}:80/TCP \\(ClusterIP, id \\d+\\) has 0 backends`)],
    noProposal: /a policy cannot allow this flow/,
  }, 'the no-backend drop', { s });
  const svcApply = await explain('--to-service', 'default/empty', '--apply', '--yes');
  t.equal(svcApply.code, 1);
  t.match(svcApply.err, /nothing to apply: a policy cannot allow this flow: it was not dropped by policy but for SERVICE_BACKEND_NOT_FOUND/);

  // 4. a forged source address: the bad pod sends from the client's address
  ip('-n', bad.ns, 'addr', 'add', `${client.ip}/32`, 'dev', 'eth0');
  t.notOk(await exchange('udp', bad.traffic, srv.traffic, client.ip, srv.ip, 5353), 'the forged datagrams do not reach the server');
  let f: CelliumExplanation | undefined;
  t.ok(await until(async () => (f = await explained('--from', client.ip, '--to', srv.ip).catch(() => undefined))?.reason.code === 132, 5000, 100), 'the forged-source drop is the last from that address');
  t.match(f, {
    reason: { name: 'INVALID_SOURCE_IP', kind: 'source' },
    decision: /^the source check dropped it: endpoint \d+ \(default\/ebad\) sent a packet from .* that is not its own \(it belongs to endpoint \d+\)/,
    details: [new RegExp(`${client.ip.replace(/\./g, '\\.')} is the address of endpoint \\d+ \\(default/eclient\\)`), /came from the interface of endpoint \d+ \(default\/ebad\)/],
  }, 'the forged source', { f });
  t.notOk(f?.proposal);

  // the real hubble CLI's output, from a file
  t.test('from hubble observe -o json output', { skip: needs('hubble') }, async (t) => {
    const hubble = (await run('bash', [join(import.meta.dirname, '..', '..', 'scripts', 'hubble.sh'), 'path'])).stdout.trim();
    const out = (await run(hubble, ['observe', '--server', `unix://${hsock}`, '--verdict', 'DROPPED', '-o', 'json', '--last', '200', '--to-service', 'default/empty'], { timeout: 20000 })).stdout;
    const file = join(dir, 'drops.json');
    writeFileSync(file, out);
    const r = await cli(agent.socketPath, 'explain', file);
    t.equal(r.code, 0, r.err);
    t.match(r.out, /Drop reason:\s+SERVICE_BACKEND_NOT_FOUND \(158\)/);
    t.match(r.out, /No policy proposed: a policy cannot allow this flow/);
  });
});
