// Privileged, BPF datapath (issue 13 point 6): `cellium monitor` against the whole agent in this
// process, on real TCP traffic between two pods through the attached programs. The server pod
// accepts 80/TCP from the client and nothing else. The monitor shows the drop of the denied
// connection and the policy verdicts of both within a second, in cilium-dbg's line format and as
// Hubble-style JSON; --type and --related-to filter; traces carry the conntrack state; the
// counters reach /metrics; a reader that goes away mid-stream costs the agent nothing; bad flags
// are usage errors naming the flag.
import t from 'tap';
import { runCli } from '../../src/cli/main.js';
import { MetricsServerToken } from '../../src/cells/api-metrics/index.js';
import { MonitorAgentToken } from '../../src/cells/monitor/index.js';
import { SMALL_CT, appPolicy, peerPorts } from './ct-fixtures.js';
import { Cleanup, allocatePod, bpfRoot, cli, connects, endpointRequest, skipReason, startBpfAgent, until } from './fixtures.js';

const POOL = '10.244.7.0/24';

/** `cellium [GLOBAL] monitor ARGS --max-events MAX` in this process; `done` is its exit code, or -1 after `ms`. */
function monitor(socketPath: string, global: string[], args: string[], max: number, ms = 15000): { lines: string[]; err: string[]; done: Promise<number> } {
  const lines: string[] = [];
  const err: string[] = [];
  const run = runCli(['--socket-path', socketPath, ...global, 'monitor', ...args, '--max-events', String(max)], {
    stdout: (s) => lines.push(...s.split('\n').filter(Boolean)), stderr: (s) => err.push(s), readFile: async () => '', env: {},
  });
  const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(-1), ms).unref());
  return { lines, err, done: Promise.race([run, timeout]) };
}

/** Until the stream's first (info) record arrived: the agent is reading for it. */
function listening(m: { lines: string[]; err: string[] }): Promise<boolean> {
  return until(() => [...m.lines, ...m.err].some((l) => l.includes('Listening for events')), 5000, 20);
}

const ip = (a: string): string => a.replaceAll('.', '\\.');

t.test('cellium monitor: drops and policy verdicts within a second, lines and JSON, filters, traces, metrics', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL, SMALL_CT);
  const client = await allocatePod(c, agent.client, 'mclient');
  const server = await allocatePod(c, agent.client, 'mserver');
  const clientEp = await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=mclient']));
  const serverEp = await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=mserver']));
  const clientIdentity = clientEp.status.identity?.id;
  t.ok(clientIdentity, 'the client has an identity');
  const pol = await cli(agent.socketPath, 'policy', 'import', appPolicy(agent.dir, 'mserver', 'mserver', { ingress: [peerPorts('fromEndpoints', 'mclient', ['80/TCP'])] }), '--wait');
  t.equal(pol.code, 0, pol.err);

  // lines: only the server's drops and verdicts (the client's own egress verdicts are filtered out)
  // (the pods' own IPv6 multicast listener reports are real events too: the checks look at TCP)
  const tcpLines = (m: { lines: string[] }): string[] => m.lines.filter((l) => / tcp /.test(l) || / tcp$/.test(l) || l.endsWith(' tcp SYN') || /tcp [A-Z, ]+$/.test(l));
  // a denied SYN is sent again (retransmissions): each try is a verdict and a drop
  const deny = new RegExp(`^Policy verdict log: flow 0x0 local EP ID ${serverEp.id}, remote ID ${clientIdentity}, proto 6, ingress, action deny, auth: disabled, match none, ${ip(client.ip)}:\\d+ -> ${ip(server.ip)}:81 tcp SYN$`);
  const dropped = new RegExp(`^xx drop \\(Policy denied\\) flow 0x0 to endpoint ${serverEp.id}, ifindex \\d+, , identity ${clientIdentity}->\\d+: ${ip(client.ip)}:\\d+ -> ${ip(server.ip)}:81 tcp SYN$`);
  const allow = new RegExp(`^Policy verdict log: flow 0x0 local EP ID ${serverEp.id}, remote ID ${clientIdentity}, proto 6, ingress, action allow, auth: disabled, match L3-L4, ${ip(client.ip)}:\\d+ -> ${ip(server.ip)}:80 tcp SYN$`);
  const text = monitor(agent.socketPath, [], ['--type', 'drop', '--type', 'policy-verdict', '--related-to', String(serverEp.id)], 1000);
  t.ok(await listening(text), 'the text monitor is listening');
  t.notOk(await connects(client, server, 81), 'client -> server:81 is denied');
  const deniedAt = Date.now();
  t.ok(await until(() => tcpLines(text).length >= 2, 1000, 10), 'the denied connection shows up within a second', { lines: text.lines });
  t.ok(Date.now() - deniedAt <= 1000);
  t.ok(await connects(client, server, 80), 'client -> server:80 is allowed');
  t.ok(await until(() => tcpLines(text).some((l) => allow.test(l)), 1000, 10), 'its verdict within a second too, with the rule kind (L3-L4)', { lines: text.lines });
  const events = tcpLines(text);
  t.match(events[0], deny, 'first the verdict on the new connection', { lines: text.lines });
  t.match(events[1], dropped, 'then its drop');
  t.ok(events.every((l) => deny.test(l) || dropped.test(l) || allow.test(l)), 'nothing else about TCP', { events });

  // JSON: Hubble Flow field names, both sides described
  const json = monitor(agent.socketPath, ['-o', 'json'], ['--type', 'drop', '--related-to', String(serverEp.id)], 1000);
  t.ok(await listening(json), 'the JSON monitor is listening');
  t.notOk(await connects(client, server, 81));
  const tcpFlows = (): Array<Record<string, unknown>> => json.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((f) => (f.l4 as Record<string, unknown> | undefined)?.TCP);
  t.ok(await until(() => tcpFlows().length >= 1, 1000, 10), 'the drop as JSON within a second');
  t.ok(json.lines.every((l) => l.startsWith('{')), 'one JSON object a line, nothing else on stdout');
  const flow = tcpFlows()[0]!;
  t.match(flow, {
    verdict: 'DROPPED', drop_reason_desc: 'POLICY_DENIED', event_type: { type: 1 },
    IP: { source: client.ip, destination: server.ip, ipVersion: 'IPv4' },
    l4: { TCP: { destination_port: 81, flags: { SYN: true } } },
    source: { ID: clientEp.id, identity: clientIdentity, labels: ['k8s:app=mclient'] },
    destination: { ID: serverEp.id, labels: ['k8s:app=mserver'] },
    traffic_direction: 'INGRESS', is_reply: false,
  });

  // traces: a new flow and its replies, with the conntrack state, and no drops among them
  const trace = monitor(agent.socketPath, [], ['--type', 'trace', '--related-to', String(serverEp.id)], 1000);
  t.ok(await listening(trace));
  t.ok(await connects(client, server, 80));
  t.ok(await until(() => tcpLines(trace).length >= 2, 1000, 10), 'traces within a second');
  const traces = tcpLines(trace);
  t.match(traces[0], new RegExp(`^-> endpoint ${serverEp.id} flow 0x0 , identity ${clientIdentity}->\\d+ state new ifindex \\d+: ${ip(client.ip)}:\\d+ -> ${ip(server.ip)}:80 tcp SYN$`), 'the SYN to the server is a new flow');
  t.match(traces[1], new RegExp(`^<- endpoint ${serverEp.id} flow 0x0 , identity \\d+->${clientIdentity} state reply ifindex \\d+: ${ip(server.ip)}:80 -> ${ip(client.ip)}:\\d+ tcp SYN, ACK$`), 'the SYN-ACK is a reply');

  // the counters on /metrics
  const scrape = await agent.h.get(MetricsServerToken).scrape();
  const value = (re: RegExp): number => Number(re.exec(scrape)?.[1] ?? NaN);
  t.ok(value(/^cellium_drop_count_total\{reason="policy",direction="INGRESS"\} (\d+)$/m) >= 2, 'drops by reason and direction', { scrape: scrape.split('\n').filter((l) => l.startsWith('cellium_drop') || l.startsWith('cellium_forward')) });
  t.ok(value(/^cellium_forward_count_total\{direction="INGRESS"\} (\d+)$/m) > 0, 'forwarded packets by direction');
  t.ok(value(/^cellium_forward_count_total\{direction="EGRESS"\} (\d+)$/m) > 0);

  // a reader that disappears mid-stream: the agent stops reading once nobody listens
  const listeners = (): number => agent.h.get(MonitorAgentToken).listeners;
  const before = listeners();
  const gone = new AbortController();
  const seen: string[] = [];
  const stream = agent.client.monitor({}, (r) => void seen.push(r.kind), gone.signal).catch(() => undefined);
  t.ok(await until(() => seen.includes('info'), 5000, 20));
  t.equal(listeners(), before + 1, 'one more listener');
  gone.abort();
  await stream;
  t.ok(await until(() => listeners() === before, 2000, 20), 'one fewer once the client went away');
  t.ok(await connects(client, server, 80), 'the agent and the datapath carry on');
  t.equal((await agent.client.listEndpoints()).length, 2);
});

t.test('cellium monitor: bad flags are usage errors naming the flag', async (t) => {
  const out = (args: string[]) => {
    const err: string[] = [];
    return runCli(['--socket-path', '/nonexistent/cellium.sock', 'monitor', ...args], { stdout: () => undefined, stderr: (s) => err.push(s), readFile: async () => '', env: {} }).then((code) => ({ code, err: err.join('') }));
  };
  t.match(await out(['--type', 'drops']), { code: 2, err: /--type "drops" is not an event type: use one of drop, trace, policy-verdict/ });
  t.match(await out(['--related-to', 'x1']), { code: 2, err: /--related-to "x1" is not an endpoint ID/ });
  t.match(await out(['--related-to', '70000']), { code: 2, err: /--related-to "70000"/ });
  const few = monitor('/nonexistent/cellium.sock', [], [], 1, 5000);
  t.equal(await few.done, 1, 'an unreachable agent is a failure, not a hang');
  t.match(few.err.join(''), /cannot reach|unix socket \/nonexistent\/cellium.sock/);
  t.match(await out(['--max-events', '0']), { code: 2, err: /--max-events "0" must be a whole number of at least 1/ });
});
