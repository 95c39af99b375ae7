// Privileged, BPF datapath: services in bpf_lxc (bpf/lib/lb.h) on real traffic. The IPv4 LB maps
// are written with Cilium's layouts (test/datapath-bpf/lb-maps.ts) under the agent's BPF root;
// pods made like the CNI plugin makes them connect to the frontends:
//   - connections to a ClusterIP spread over its three backends, and the client sees the VIP as
//     its peer (getpeername: the replies were rewritten back);
//   - a backend taken out of the service gets no new flows, while an established stream to it
//     (its CT_SERVICE entry remembers the backend) keeps flowing;
//   - a frontend without backends is rejected (an ICMP port unreachable from the VIP: TCP connect
//     refused, UDP refused) and an unknown port of a known VIP dropped, both counted as
//     DROP_NO_SERVICE in cellium_metrics;
//   - UDP through a VIP: the answer comes back from the VIP (a connected UDP socket accepts it);
//   - policy is enforced against the backend after translation: a client the backends' policy
//     allows connects through the VIP, an unlabelled one is dropped.
import t from 'tap';
import { Cleanup, allocatePod, bpfRoot, cli, endpointRequest, policyFile, skipReason, startBpfAgent, tcpFrom, until, type Pod } from './fixtures.js';
import { TestLB4, type TestBackend } from './lb-maps.js';

const POOL = '10.248.0.0/24';
const TCP = 6;
const UDP = 17;

/** One `who` through `vip:port` from `from`: the backend address that served it and the peer the client saw, or why it failed. */
async function attempt(from: Pod, vip: string, port: number, ms = 1500): Promise<{ served: string; peer: string } | { failed: string }> {
  const id = from.traffic.nextId();
  from.traffic.command(`who ${vip} ${port} ${ms} ${id}`);
  const line = new RegExp(`^who ${id} (\\S+) (\\S+)$`, 'm');
  const failed = new RegExp(`^failed ${id} (\\S+)$`, 'm');
  await until(() => line.test(from.traffic.output) || failed.test(from.traffic.output), ms + 3000, 5);
  const m = line.exec(from.traffic.output);
  return m ? { served: m[1]!, peer: m[2]! } : { failed: failed.exec(from.traffic.output)?.[1] ?? 'no answer from the traffic agent' };
}

/** One `who`: what served it, or undefined when it failed. */
async function who(from: Pod, vip: string, port: number, ms = 1500): Promise<{ served: string; peer: string } | undefined> {
  const r = await attempt(from, vip, port, ms);
  return 'served' in r ? r : undefined;
}

/** Starts a server command on a pod and waits until it listens. */
async function serve(pod: Pod, proto: string, port: number): Promise<string> {
  const id = pod.traffic.nextId();
  pod.traffic.command(`listen ${proto} ${pod.ip} ${port} ${id}`);
  if (!(await pod.traffic.waitFor('ready', id, 10000))) throw new Error(`${pod.name} did not listen on ${port}`);
  return id;
}

t.test('services in bpf_lxc: spread, the VIP as peer, sticky established flows, no-backend drops, UDP, policy after translation', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL);
  const client = await allocatePod(c, agent.client, 'client');
  const stranger = await allocatePod(c, agent.client, 'stranger');
  const backends = [await allocatePod(c, agent.client, 'b1'), await allocatePod(c, agent.client, 'b2'), await allocatePod(c, agent.client, 'b3')];
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  await agent.client.createEndpoint(0, endpointRequest(stranger, []));
  for (const b of backends) await agent.client.createEndpoint(0, endpointRequest(b, ['k8s:app=server']));
  const lb = new TestLB4(root);
  c.teardown(() => lb.close());
  for (const b of backends) await serve(b, 'tcpwho', 8080);
  // one backend ID per address and port (Cilium's backends are unique by both)
  const be = (i: number, port: number): TestBackend => ({ id: port * 10 + i + 1, ip: backends[i]!.ip, port });

  // spread over three backends; the client's peer is the VIP
  const VIP = '10.96.0.50';
  lb.setService(VIP, 80, TCP, 1, [be(0, 8080), be(1, 8080), be(2, 8080)]);
  const first = await who(client, VIP, 80);
  if (!t.ok(first, `a first connection to ${VIP}:80 is answered`, { output: client.traffic.output, backends: backends.map((b) => b.traffic.output), drops: await agent.client.getMap('cellium_metrics') })) return;
  const served = new Map<string, number>();
  const peers = new Set<string>();
  const N = 90;
  for (let i = 0; i < N; i++) {
    const r = await who(client, VIP, 80);
    if (!r) continue;
    served.set(r.served, (served.get(r.served) ?? 0) + 1);
    peers.add(r.peer);
  }
  const total = [...served.values()].reduce((a, b) => a + b, 0);
  t.equal(total, N, `all ${N} connections to ${VIP}:80 answered`);
  for (const b of backends) {
    const n = served.get(b.ip) ?? 0;
    t.ok(n >= 0.15 * N, `backend ${b.ip} served ${n} of ${N} (>= 15%)`);
  }
  t.strictSame([...peers], [`${VIP}:80`], 'the client saw the VIP as its peer every time');

  // a backend leaves the service: no new flows to it
  lb.setService(VIP, 80, TCP, 1, [be(0, 8080), be(1, 8080)], [be(2, 8080)]);
  let toB3 = 0;
  let answered = 0;
  for (let i = 0; i < 30; i++) {
    const r = await who(client, VIP, 80);
    if (r) answered++;
    if (r?.served === backends[2]!.ip) toB3++;
  }
  t.equal(answered, 30, 'with two backends every connection is answered');
  t.equal(toB3, 0, 'the terminating backend gets no new connection');

  // an established stream stays on its backend after the backend left the service
  const VIP2 = '10.96.0.51';
  const echo = [await serve(backends[0]!, 'tcpecho', 7007), await serve(backends[1]!, 'tcpecho', 7007)];
  lb.setService(VIP2, 7, TCP, 2, [be(0, 7007), be(1, 7007)]);
  const sid = client.traffic.nextId();
  client.traffic.command(`stream ${VIP2} 7 - ${sid}`);
  t.ok(await client.traffic.waitFor('streaming', sid, 5000), 'a stream through the VIP');
  const carrier = await until(() => echo.some((id, i) => backends[i]!.traffic.output.includes(`got ${id}\n`)), 3000) ? echo.findIndex((id, i) => backends[i]!.traffic.output.includes(`got ${id}\n`)) : -1;
  t.ok(carrier >= 0, `the stream landed on backend ${carrier + 1}`);
  const other = carrier === 0 ? 1 : 0;
  const echoes = async (): Promise<number> => {
    const before = client.traffic.output.length;
    client.traffic.command(`report ${sid}`);
    await until(() => client.traffic.output.length > before && new RegExp(`echoes ${sid} -?\\d+\\n`).test(client.traffic.output.slice(before)), 2000, 20);
    return Number(new RegExp(`echoes ${sid} (-?\\d+)`).exec(client.traffic.output.slice(before))?.[1] ?? -1);
  };
  lb.setService(VIP2, 7, TCP, 2, [be(other, 7007)], [be(carrier, 7007)]);
  const at = await echoes();
  await new Promise((r) => setTimeout(r, 1000));
  const later = await echoes();
  t.ok(later > at + 5, `the established stream keeps its backend (${at} -> ${later} echoes)`);
  t.notMatch(client.traffic.output, new RegExp(`reset ${sid} `), 'and was never reset');
  client.traffic.command(`stop ${sid}`);

  // no backends, and an unknown port of a known VIP: dropped and counted
  const VIP3 = '10.96.0.53';
  lb.setService(VIP3, 80, TCP, 3, []);
  lb.setWildcard(VIP);
  const dropsBefore = await noServiceDrops();
  t.strictSame(await attempt(client, VIP3, 80, 3000), { failed: 'ECONNREFUSED' }, 'a service without backends is rejected at once (ICMP port unreachable from the VIP: connection refused, no timeout)');
  t.strictSame(await attempt(client, VIP, 81, 600), { failed: 'timeout' }, 'an unknown port of a known VIP is dropped');
  t.ok(await until(async () => (await noServiceDrops()) >= dropsBefore + 2, 3000), 'both counted as no-service drops in cellium_metrics');

  // UDP through a VIP: the answer comes from the VIP
  const VIP4 = '10.96.0.54';
  await serve(backends[0]!, 'udpecho', 5353);
  lb.setService(VIP4, 53, UDP, 4, [be(0, 5353)]);
  const ask = client.traffic.nextId();
  client.traffic.command(`ask ${VIP4} 53 - 3000 ${ask}`);
  t.equal(await client.traffic.waitFor(['answered', 'refused', 'timeout'], ask, 6000), 'answered', 'a UDP request to the VIP is answered from the VIP');
  lb.setService('10.96.0.55', 53, UDP, 5, []);
  const refused = client.traffic.nextId();
  client.traffic.command(`ask 10.96.0.55 53 - 3000 ${refused}`);
  t.equal(await client.traffic.waitFor(['answered', 'refused', 'timeout'], refused, 6000), 'refused', 'a UDP request to a service without backends is refused (ICMP port unreachable)');

  // policy after translation: the backends allow app=client on 8080 only
  const allow = policyFile(agent.dir, 'web-allow-client', { ingress: [tcpFrom('client', 8080)] });
  const imported = await cli(agent.socketPath, 'policy', 'import', '--wait', allow);
  t.equal(imported.code, 0, `policy import: ${imported.err.trim()}`);
  t.ok(await who(client, VIP, 80), 'the allowed client connects through the VIP');
  t.equal(await who(stranger, VIP, 80, 800), undefined, 'an unlabelled client is dropped by the backends\' policy');

  async function noServiceDrops(): Promise<number> {
    const m = await agent.client.getMap('cellium_metrics');
    const entries = (m.cache ?? []) as Array<{ key?: string; value?: string }>;
    const line = entries.filter((e) => String(e.key).startsWith('no-service')).map((e) => /packets=(\d+)/.exec(String(e.value))?.[1]);
    return line.reduce((a, n) => a + Number(n ?? 0), 0);
  }
});

t.test('--service-no-backend-response=drop: a service without backends times out instead of refusing; a bad value is refused at start', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  await t.rejects(startBpfAgent(c, bpfRoot(c), '10.248.2.0/24', { 'service-no-backend-response': 'ignore' }), /service-no-backend-response.*(reject|drop)/, 'an unknown value names the flag and the choices');
  const agent = await startBpfAgent(c, root, '10.248.1.0/24', { 'service-no-backend-response': 'drop' });
  const client = await allocatePod(c, agent.client, 'client');
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  const lb = new TestLB4(root);
  c.teardown(() => lb.close());
  lb.setService('10.96.1.50', 80, TCP, 1, []);
  t.strictSame(await attempt(client, '10.96.1.50', 80, 800), { failed: 'timeout' }, 'dropped: the connect times out');
  lb.setService('10.96.1.50', 53, UDP, 2, []);
  const ask = client.traffic.nextId();
  client.traffic.command(`ask 10.96.1.50 53 - 800 ${ask}`);
  t.equal(await client.traffic.waitFor(['answered', 'refused', 'timeout'], ask, 4000), 'timeout', 'UDP too: no answer, no refusal');
});
