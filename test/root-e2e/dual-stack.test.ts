// Privileged, BPF datapath, dual-stack agent (issue 11, "Ready means ready, in both families"): the
// whole agent (src/cells.ts, --datapath-mode=bpf, --ipv4-range and --ipv6-range) in this process,
// pods added through the built shim. Right after each ADD returns, the first `ping -6 -c 1 -W 1`
// from a peer pod and from the host succeeds (no retry), as the first IPv4 ping does; nothing on
// either end of the veth is tentative and the host never resolves a pod address. Then IPv6 policy
// is enforced like IPv4 on real TCP connections through the attached bpf_lxc programs: ingress
// allow and deny (a policy selecting the server), egress allow and deny (one selecting the client).
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CelliumClient } from '../../src/api/client.js';
import { agentCells } from '../../src/cells.js';
import { exchange, skipUnlessBpf, TrafficAgent } from '../bpf/fixtures/topology.js';
import { cli } from '../root-datapath-agent/fixtures.js';
import { buildShim, cni, conf, ip, ipJson, netns, startAgent, uniq, type Agent } from './agent.js';

const run = promisify(execFile);

/** A pod added through the shim. */
interface Pod {
  readonly name: string;
  readonly ns: string;
  readonly ipv4: string;
  readonly ipv6: string;
  readonly hostIf: string;
  readonly mac: string;
}

/** Runs ADD for pod `name` (namespace `default`) in a fresh network namespace; resolves when the shim exits. */
async function addPod(t: Test, agent: Agent, name: string): Promise<Pod> {
  const ns = netns(t, `ds-${name}`);
  const id = `ds-${name}-${uniq()}`;
  const r = await cni('ADD', { containerId: id, netns: ns.path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${name}` }, conf(agent));
  if (r.code !== 0) throw new Error(`ADD ${name} failed: ${r.stdout}${r.stderr}`);
  t.teardown(() => cni('DEL', { containerId: id, netns: ns.path }, conf(agent)));
  const res = JSON.parse(r.stdout) as { interfaces: Array<{ name: string; mac: string }>; ips: Array<{ address: string }> };
  const addr = (v6: boolean): string => res.ips.map((x) => x.address.split('/')[0]!).find((a) => a.includes(':') === v6)!;
  return { name, ns: ns.name, ipv4: addr(false), ipv6: addr(true), hostIf: res.interfaces[0]!.name, mac: res.interfaces[1]!.mac };
}

/** One ping, no retry, from namespace `ns` (the host's own when undefined). */
async function ping1(ns: string | undefined, dst: string): Promise<boolean> {
  const args = ['ping', ...(dst.includes(':') ? ['-6'] : []), '-c', '1', '-W', '1', dst];
  try {
    await (ns ? run('ip', ['netns', 'exec', ns, ...args]) : run(args[0]!, args.slice(1)));
    return true;
  } catch {
    return false;
  }
}

/** The whole agent with both pools (`10.214.<n>.0/24`, `fd00:214:<n>::/120`) and the BPF datapath. */
function dualStackAgent(t: Test, n: number): Promise<Agent> {
  return startAgent(t, `10.214.${n}.0/24`, { base: agentCells, config: { 'datapath-mode': 'bpf', 'ipv6-range': `fd00:214:${n}::/120` } });
}

const skip = skipUnlessBpf();

t.before(() => {
  if (!skip) buildShim();
});

t.test('IPv6 is ready when ADD returns: the first ping6 from a peer pod and from the host succeeds', { skip }, async (t) => {
  const agent = await dualStackAgent(t, 0);
  const a = await addPod(t, agent, 'a');
  const b = await addPod(t, agent, 'b');
  t.ok(await ping1(a.ns, b.ipv6), `peer pod a -> b ${b.ipv6}: the first ping6 right after ADD`);
  t.ok(await ping1(undefined, b.ipv6), `host -> b ${b.ipv6}: the first ping6`);
  t.ok(await ping1(b.ns, a.ipv6), `b -> a ${a.ipv6}: the first ping6`);
  const c = await addPod(t, agent, 'c');
  t.ok(await ping1(undefined, c.ipv6), `host -> c ${c.ipv6}: the first ping6 right after ADD, before any pod talked to c`);
  t.ok(await ping1(a.ns, c.ipv6), `peer pod a -> c ${c.ipv6}: the first ping6`);
  t.ok(await ping1(c.ns, b.ipv4), 'IPv4 as before: c -> b');
  t.ok(await ping1(undefined, c.ipv4), 'IPv4 as before: host -> c');

  for (const p of [a, b, c]) {
    t.equal(ip('-n', p.ns, '-6', 'addr', 'show', 'tentative').trim(), '', `${p.name}: no tentative address in the pod`);
    t.equal(ip('-6', 'addr', 'show', 'dev', p.hostIf, 'tentative').trim(), '', `${p.name}: no tentative address on ${p.hostIf}`);
    t.equal(ip('netns', 'exec', p.ns, 'cat', '/proc/sys/net/ipv6/conf/eth0/accept_dad').trim(), '0', `${p.name}: DAD off on the pod's eth0`);
    t.equal(readFileSync(`/proc/sys/net/ipv6/conf/${p.hostIf}/accept_dad`, 'utf8').trim(), '0', `${p.name}: DAD off on ${p.hostIf}`);
    const addrs = ipJson<{ addr_info: Array<{ local: string; nodad?: boolean }> }>('-n', p.ns, '-6', 'addr', 'show', 'dev', 'eth0').flatMap((l) => l.addr_info);
    t.ok(addrs.some((x) => x.local === p.ipv6 && x.nodad === true), `${p.name}: ${p.ipv6} carries IFA_F_NODAD`);
    const neigh = ipJson<{ dst: string; lladdr: string; state: string[] }>('neigh', 'show', 'dev', p.hostIf);
    for (const addr of [p.ipv4, p.ipv6]) {
      t.same(neigh.filter((n) => n.dst === addr).map((n) => [n.lladdr, n.state]), [[p.mac, ['PERMANENT']]], `${p.name}: permanent host neighbour ${addr} -> the pod's MAC`);
    }
  }
});

/** A CiliumNetworkPolicy in namespace default on pods `app=<app>`, written to a file; returns its path. */
function policyOn(dir: string, app: string, name: string, spec: Record<string, unknown>): string {
  const file = join(dir, `${name}.json`);
  const cnp = { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace: 'default' }, spec: { endpointSelector: { matchLabels: { app } }, ...spec } };
  writeFileSync(file, JSON.stringify(cnp));
  return file;
}

/** A peer selector on `app=<app>` with TCP `port`. */
function peer(key: 'fromEndpoints' | 'toEndpoints', app: string, port: number): Record<string, unknown> {
  return { [key]: [{ matchLabels: { app } }], toPorts: [{ ports: [{ port: String(port), protocol: 'TCP' }] }] };
}

t.test('IPv6 policy is enforced like IPv4: ingress and egress, allow and deny, on real TCP', { skip }, async (t) => {
  const agent = await dualStackAgent(t, 1);
  const client = new CelliumClient({ socketPath: agent.socketPath });
  t.teardown(() => client.close());
  const pods = { client: await addPod(t, agent, 'client'), server: await addPod(t, agent, 'server'), other: await addPod(t, agent, 'other') };
  const traffic = new Map<Pod, TrafficAgent>();
  for (const p of Object.values(pods)) {
    const tr = new TrafficAgent(p.ns);
    t.teardown(() => tr.stop());
    traffic.set(p, tr);
  }
  for (const app of ['client', 'server'] as const) {
    const ep = (await client.listEndpoints()).find((e) => e.status.networking?.addressing?.[0]?.ipv6 === pods[app].ipv6)!;
    await client.setEndpointLabels(ep.id, [`k8s:app=${app}`]);
  }
  const { client: c, server: s, other: o } = pods;
  /** Whether a TCP connection from `from` to `to`:`port` over `family` reaches the server. */
  const connects = (from: Pod, to: Pod, port: number, family: 'ipv4' | 'ipv6'): Promise<boolean> =>
    exchange('tcp', traffic.get(from)!, traffic.get(to)!, from[family], to[family], port, 1500);
  /** The same expectation in both families. */
  const both = async (from: Pod, to: Pod, port: number, want: boolean, what: string): Promise<void> => {
    for (const family of ['ipv6', 'ipv4'] as const) t.equal(await connects(from, to, port, family), want, `${what} (${family}: ${from.name} -> ${to.name}:${port})`);
  };
  const policy = async (...args: string[]): Promise<void> => {
    const r = await cli(agent.socketPath, 'policy', ...args, '--wait');
    t.equal(r.code, 0, `cellium policy ${args.join(' ')} --wait ${r.err.trim()}`);
  };

  await both(c, s, 80, true, 'no policy: connects');
  await both(o, s, 80, true, 'no policy: connects');

  await policy('import', policyOn(agent.dir, 'server', 'ingress-allow', { ingress: [peer('fromEndpoints', 'client', 80)] }));
  await both(c, s, 80, true, 'ingress allow: the allowed client connects');
  await both(c, s, 81, false, 'ingress allow: another port is dropped');
  await both(o, s, 80, false, 'ingress allow: another pod is dropped');
  t.notOk(await ping1(c.ns, s.ipv6), 'ingress allow (TCP 80 only): ping6 to the server is dropped');
  await policy('import', policyOn(agent.dir, 'server', 'ingress-deny', { ingressDeny: [peer('fromEndpoints', 'client', 80)] }));
  await both(c, s, 80, false, 'ingress deny overrides the allow');
  await both(c, o, 80, true, 'ingress deny selects only the server');
  await policy('delete', '--all');
  await both(c, s, 80, true, 'policies deleted: connects again');

  await policy('import', policyOn(agent.dir, 'client', 'egress-allow', { egress: [peer('toEndpoints', 'server', 80)] }));
  await both(c, s, 80, true, 'egress allow: the client reaches the allowed server port');
  await both(c, s, 81, false, 'egress allow: another port is dropped');
  await both(c, o, 80, false, 'egress allow: another pod is dropped');
  await both(o, s, 81, true, 'egress allow selects only the client');
  await policy('import', policyOn(agent.dir, 'client', 'egress-deny', { egressDeny: [peer('toEndpoints', 'server', 80)] }));
  await both(c, s, 80, false, 'egress deny overrides the allow');
  await both(o, s, 80, true, 'egress deny selects only the client');
  await policy('delete', '--all');
  await both(c, s, 81, true, 'policies deleted: connects again');
  t.ok(await ping1(c.ns, s.ipv6), 'policies deleted: ping6 again');
});
