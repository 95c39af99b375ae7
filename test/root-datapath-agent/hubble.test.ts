// Privileged, BPF datapath (issue 28 points 1-3): the real `hubble` CLI (scripts/hubble.sh, built
// from the Go module proxy at the pinned release) against the whole agent in this process with
// --enable-hubble, on real TCP traffic between two pods through the attached programs. The server
// pod accepts 80/TCP from the client and nothing else: `hubble observe --verdict DROPPED -o json`
// shows the policy-denied connection with both pods, labels, identities, Hubble's drop reason;
// `--follow` streams new flows; `--pod` and `--label` filter; `hubble status` and `hubble list
// nodes` report the ring; a service without backends shows as the destination_service of its
// no-backend drop (`--to-service`); the Hubble metrics count on /metrics.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { MetricsServerToken } from '../../src/cells/api-metrics/index.js';
import { ServiceManagerToken } from '../../src/cells/loadbalancer/index.js';
import { fe, svc } from '../loadbalancer/helpers.js';
import { needs } from '../needs.js';
import { SMALL_CT, appPolicy, peerPorts } from './ct-fixtures.js';
import { Cleanup, allocatePod, bpfRoot, cli, connects, endpointRequest, skipReason, startBpfAgent, tempDir, until } from './fixtures.js';

const POOL = '10.244.9.0/24';
const EMPTY_VIP = '10.161.97.11';
const run = promisify(execFile);

/** The hubble binary scripts/hubble.sh built. */
function hubbleBin(): string {
  const r = spawnSync('bash', [join(import.meta.dirname, '..', '..', 'scripts', 'hubble.sh'), 'path'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('the hubble CLI is not built: run bash scripts/hubble.sh build (scripts/test.sh does)');
  return r.stdout.trim();
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The flows of `hubble observe -o json` output (one GetFlowsResponse or Flow a line). */
function flowsOf(out: string): Json[] {
  return out.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Json).map((o) => (o.flow as Json | undefined) ?? o).filter((f) => f.verdict !== undefined);
}

const tcpTo = (port: number) => (f: Json): boolean => f.l4?.TCP?.destination_port === port;

t.test('the hubble CLI against the agent: dropped and forwarded flows, follow, pod and label filters, status, metrics', { skip: skipReason() || needs('hubble') }, async (t) => {
  const c = new Cleanup(t);
  const bin = hubbleBin();
  const root = bpfRoot(c);
  const dir = tempDir(c, 'agent');
  const socket = join(dir, 'hubble.sock');
  const agent = await startBpfAgent(c, root, POOL, {
    ...SMALL_CT, 'enable-hubble': true, 'hubble-event-buffer-capacity': 1023, 'hubble-metrics': 'flow,drop,tcp,port-distribution', 'hubble-socket-path': socket,
  }, dir);
  const server = `unix://${socket}`;
  const hubble = async (...args: string[]): Promise<string> => (await run(bin, [...args, '--server', server], { timeout: 20000 })).stdout;

  const client = await allocatePod(c, agent.client, 'hclient');
  const srv = await allocatePod(c, agent.client, 'hserver');
  const clientEp = await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=hclient']));
  const serverEp = await agent.client.createEndpoint(0, endpointRequest(srv, ['k8s:app=hserver']));
  const pol = await cli(agent.socketPath, 'policy', 'import', appPolicy(agent.dir, 'hserver', 'hserver', { ingress: [peerPorts('fromEndpoints', 'hclient', ['80/TCP'])] }), '--wait');
  t.equal(pol.code, 0, pol.err);

  // --follow: a client streaming from before the traffic sees it as it happens
  const follow = spawn(bin, ['observe', '--server', server, '--follow', '-o', 'json', '--pod', 'default/hserver'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let followed = '';
  let followErr = '';
  follow.stdout.on('data', (b: Buffer) => (followed += b.toString()));
  follow.stderr.on('data', (b: Buffer) => (followErr += b.toString()));
  c.teardown(() => void follow.kill());

  // traffic until the follower has seen it (it may connect after the first try)
  t.ok(await until(async () => {
    await connects(client, srv, 81);
    await connects(client, srv, 80);
    return flowsOf(followed).some(tcpTo(81)) && flowsOf(followed).some(tcpTo(80));
  }, 15000, 200), 'hubble observe --follow streams the new flows', { followErr, followed: followed.slice(0, 2000) });
  const streamed = flowsOf(followed);
  t.ok(streamed.every((f) => f.source?.pod_name === 'hserver' || f.destination?.pod_name === 'hserver'), '--pod default/hserver: only flows from or to that pod');

  // --verdict DROPPED -o json: the denied connection, both sides described
  const dropped = flowsOf(await hubble('observe', '--verdict', 'DROPPED', '-o', 'json', '--last', '1000'));
  t.ok(dropped.length > 0 && dropped.every((f) => f.verdict === 'DROPPED'), 'only dropped flows', { n: dropped.length });
  const drop = dropped.find((f) => tcpTo(81)(f) && f.event_type?.type === 1);
  t.match(drop, {
    verdict: 'DROPPED', drop_reason_desc: 'POLICY_DENIED', drop_reason: 133, event_type: { type: 1, sub_type: 133 },
    IP: { source: client.ip, destination: srv.ip, ipVersion: 'IPv4' },
    l4: { TCP: { destination_port: 81, flags: { SYN: true } } },
    source: { ID: clientEp.id, identity: clientEp.status.identity?.id, namespace: 'default', pod_name: 'hclient', labels: ['k8s:app=hclient', 'k8s:io.kubernetes.pod.namespace=default'] },
    destination: { ID: serverEp.id, identity: serverEp.status.identity?.id, namespace: 'default', pod_name: 'hserver', labels: ['k8s:app=hserver', 'k8s:io.kubernetes.pod.namespace=default'] },
    traffic_direction: 'INGRESS', Type: 'L3_L4', node_name: String,
  }, 'the policy drop with Hubble fields', { dropped: dropped.slice(0, 3) });
  const deniedVerdict = dropped.find((f) => tcpTo(81)(f) && f.event_type?.type === 5);
  t.match(deniedVerdict, { verdict: 'DROPPED', drop_reason_desc: 'POLICY_DENIED', is_reply: false }, 'and its policy verdict (deny)');

  // forwarded: the allowed connection, traced with its observation point, policy match and replies
  const forwarded = flowsOf(await hubble('observe', '--verdict', 'FORWARDED', '-o', 'json', '--last', '1000', '--label', 'app=hserver'));
  t.ok(forwarded.length > 0 && forwarded.every((f) => f.verdict === 'FORWARDED'), 'only forwarded flows');
  t.ok(forwarded.every((f) => [...(f.source?.labels ?? []), ...(f.destination?.labels ?? [])].includes('k8s:app=hserver')), '--label app=hserver: only flows of endpoints with that label');
  t.match(forwarded.find((f) => tcpTo(80)(f) && f.event_type?.type === 5 && f.traffic_direction === 'INGRESS'), { policy_match_type: 2, traffic_direction: 'INGRESS', is_reply: false }, 'the allowed verdict, matched L3-L4');
  t.match(forwarded.find((f) => tcpTo(80)(f) && f.trace_observation_point === 'TO_ENDPOINT'), { trace_reason: 'NEW', is_reply: false, event_type: { type: 4 } }, 'the SYN traced to the endpoint as a new flow');
  t.ok(forwarded.some((f) => f.l4?.TCP?.source_port === 80 && f.is_reply === true && f.trace_observation_point === 'FROM_ENDPOINT'), 'the SYN-ACK traced from the endpoint as a reply');

  // filters on both sides: --pod of the client, --from-pod/--to-pod, and a label nobody has
  const clientFlows = flowsOf(await hubble('observe', '-o', 'json', '--last', '1000', '--pod', 'default/hclient'));
  t.ok(clientFlows.length > 0 && clientFlows.every((f) => f.source?.pod_name === 'hclient' || f.destination?.pod_name === 'hclient'), '--pod default/hclient', { n: clientFlows.length, bad: clientFlows.filter((f) => f.source?.pod_name !== 'hclient' && f.destination?.pod_name !== 'hclient').slice(0, 2) });
  const toServer = flowsOf(await hubble('observe', '-o', 'json', '--last', '1000', '--to-pod', 'default/hserver', '--protocol', 'tcp', '--to-port', '81'));
  t.ok(toServer.length > 0 && toServer.every((f) => f.destination?.pod_name === 'hserver' && tcpTo(81)(f)), '--to-pod, --protocol, --to-port');
  t.same(flowsOf(await hubble('observe', '-o', 'json', '--last', '1000', '--label', 'app=nobody')), [], 'a label nobody has: no flows');

  // status and nodes: the ring's size and what it holds
  const status = await hubble('status');
  t.match(status, /Healthcheck \(via unix:\/\/.*hubble\.sock\): Ok/);
  t.match(status, /Current\/Max Flows: [\d,]+\/1,023/);
  const nodes = await hubble('list', 'nodes', '-o', 'json');
  t.match(nodes, /"state":\s*"NODE_CONNECTED"/);

  // a service without backends: the drop names the service (its frontend is the destination)
  const mgr = agent.h.get(ServiceManagerToken);
  mgr.upsert({ service: svc('default/empty'), frontends: [fe(EMPTY_VIP, 80)], backends: [] });
  t.ok(await until(() => mgr.status().pending === 0 && mgr.status().done > 0, 5000, 50), 'the frontend is in the LB maps', { status: mgr.status() });
  const id = client.traffic.nextId();
  client.traffic.command(`connect ${EMPTY_VIP} 80 - 600 ${id}`);
  t.equal(await client.traffic.waitFor(['connected', 'failed'], id, 5000), 'failed', 'no backend: the connection fails');
  let svcDrops: Json[] = [];
  // the monitor hands events over every 50 ms: the drop is in the ring within a poll or two
  await until(async () => (svcDrops = flowsOf(await hubble('observe', '--verdict', 'DROPPED', '-o', 'json', '--last', '100', '--to-service', 'default/empty'))).length > 0, 3000, 100);
  t.match(svcDrops[0], {
    drop_reason_desc: 'SERVICE_BACKEND_NOT_FOUND', event_type: { type: 1, sub_type: 158 }, IP: { source: client.ip, destination: EMPTY_VIP },
    destination_service: { name: 'empty', namespace: 'default' }, source: { pod_name: 'hclient' }, traffic_direction: 'EGRESS',
  }, '--to-service: the no-backend drop with the service', { svcDrops });

  // the Hubble metrics with Hubble's names and labels
  const scrape = await agent.h.get(MetricsServerToken).scrape();
  const value = (re: RegExp): number => Number(re.exec(scrape)?.[1] ?? NaN);
  const hubbleLines = scrape.split('\n').filter((l) => l.startsWith('hubble_'));
  t.ok(value(/^hubble_drop_total\{reason="POLICY_DENIED",protocol="TCP"\} (\d+)$/m) >= 1, 'hubble_drop_total by reason and protocol', { hubbleLines });
  t.ok(value(/^hubble_flows_processed_total\{type="Trace",subtype="to-endpoint",verdict="FORWARDED"\} (\d+)$/m) >= 1, 'hubble_flows_processed_total by type, subtype, verdict');
  t.ok(value(/^hubble_flows_processed_total\{type="Drop",subtype="",verdict="DROPPED"\} (\d+)$/m) >= 1);
  t.ok(value(/^hubble_tcp_flags_total\{flag="SYN",family="IPv4"\} (\d+)$/m) >= 1, 'hubble_tcp_flags_total by flag and family');
  t.ok(value(/^hubble_tcp_flags_total\{flag="SYN-ACK",family="IPv4"\} (\d+)$/m) >= 1);
  t.ok(value(/^hubble_port_distribution_total\{protocol="TCP",port="80"\} (\d+)$/m) >= 1, 'hubble_port_distribution_total by protocol and port');

  follow.kill();
});
