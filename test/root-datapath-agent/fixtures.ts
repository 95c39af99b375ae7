// Helpers of the BPF datapath end-to-end tests: why they skip, an ordered cleanup stack, pods made
// the way the CNI plugin makes them (a network namespace, veth lxc… in the agent's namespace and
// eth0 in the pod's, /32 address, default route via the pool gateway with a permanent neighbour,
// host route to the pod), endpoint change requests for them, TCP checks through the traffic
// agents of test/bpf/fixtures, the CLI in-process, kernel-side checks (attached programs, pins,
// cellium_lxc entries), the built agent as a process and continuous pings.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLxcMap, policyMapPath } from '../../src/maps/index.js';
import { endpointPrograms, lxcLinkPath } from '../../src/cells/datapath-bpf/lxc/index.js';
import { CelliumClient } from '../../src/api/client.js';
import type { EndpointChangeRequest } from '../../src/api/models.js';
import { runCli } from '../../src/cli/main.js';
import { agentCells } from '../../src/cells.js';
import { testHive, type TestHive, type TestLike } from '../../src/hive/index.js';
import { isolatedDirs } from '../api-integration/agent.js';
import { AGENT_BIN } from '../root-e2e/agent-process.js';
import { exchange, ip, skipUnlessBpf, testBpfRoot, TrafficAgent, uniq } from '../bpf/fixtures/topology.js';

export { uniq };

/** Why these tests skip here (one line: not root, or BPF unusable), or false when they run. */
export const skipReason = skipUnlessBpf;

/** Cleanups run last-in first-out from one tap teardown; a failing step is reported and the rest still run. */
export class Cleanup implements TestLike {
  private readonly steps: Array<() => unknown> = [];
  constructor(t: { teardown(fn: () => unknown): void; comment(...a: unknown[]): void }) {
    t.teardown(async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step();
        } catch (err) {
          t.comment(`cleanup step failed: ${(err as Error).message}`);
        }
      }
    });
  }
  teardown(fn: () => unknown): void {
    this.steps.push(fn);
  }
}

/** A temporary directory, removed at cleanup. */
export function tempDir(c: Cleanup, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `cellium-dpbpf-${name}-`));
  c.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh BPF root /sys/fs/bpf/cellium-test-<uniq>, removed (with every pin under it) at cleanup. */
export function bpfRoot(c: Cleanup): string {
  const r = testBpfRoot();
  c.teardown(r.remove);
  return r.root;
}

/**
 * CELLIUM_BPF_LXC_PROGRAM (the flag's variable, which spawned agents read themselves) for the
 * in-process agent too: the suite runs against either way of loading bpf_lxc.
 */
function lxcProgram(): Record<string, string> {
  const p = process.env.CELLIUM_BPF_LXC_PROGRAM;
  return p ? { 'bpf-lxc-program': p } : {};
}

/** The whole agent (src/cells.ts) in this process with --datapath-mode=bpf on `root` (plus `config`); a client on its socket in `dir` (a restart passes the same). */
export async function startBpfAgent(c: Cleanup, root: string, pool: string, config: Record<string, unknown> = {}, dir = tempDir(c, 'agent')): Promise<{ dir: string; socketPath: string; client: CelliumClient; h: TestHive }> {
  const socketPath = join(dir, 'cellium.sock');
  const h = await testHive(c, agentCells, {
    config: { ...isolatedDirs(dir), 'bpf-root': root, 'socket-path': socketPath, 'datapath-mode': 'bpf', 'ipv4-range': pool, ...lxcProgram(), ...config },
  });
  const client = new CelliumClient({ socketPath });
  c.teardown(() => client.close());
  return { dir, socketPath, client, h };
}

/** A pod as the CNI plugin leaves it, with a traffic agent inside. */
export interface Pod {
  readonly name: string;
  readonly ns: string;
  readonly ip: string;
  readonly hostIf: string;
  readonly ifIndex: number;
  readonly mac: string;
  readonly hostMac: string;
  readonly traffic: TrafficAgent;
  /** The pod's IPv6 address, when it has one (dual-stack). */
  readonly ipv6?: string;
}

function link(ns: string | undefined, dev: string): { ifindex: number; address: string } {
  const out = ns ? ip('-n', ns, '-j', 'link', 'show', dev) : ip('-j', 'link', 'show', dev);
  return (JSON.parse(out) as Array<{ ifindex: number; address: string }>)[0]!;
}

/**
 * Creates pod `name` with address `addr` (from the agent's pool) and the pool's `gateway`, as
 * src/cells/cni-server/plumbing.ts does. Forwarding is switched on like the CNI plugin does (and,
 * like it, left on: other tests may be routing pods at the same time).
 */
export function createPod(c: Cleanup, name: string, addr: string, gateway: string, v6?: { ip: string; gateway: string }): Pod {
  const id = uniq();
  const ns = `cldp-${name}-${id}`;
  const hostIf = `lxc${id}`;
  ip('netns', 'add', ns);
  c.teardown(() => ip('netns', 'del', ns));
  ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
  c.teardown(() => {
    // Normally gone with the namespace; removes the host side if the pod side never moved.
    if (existsSync(`/sys/class/net/${hostIf}`)) ip('link', 'del', hostIf);
  });
  ip('link', 'set', hostIf, 'up');
  writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
  writeFileSync(`/proc/sys/net/ipv4/conf/${hostIf}/rp_filter`, '0');
  const host = link(undefined, hostIf);
  ip('-n', ns, 'link', 'set', 'lo', 'up');
  ip('-n', ns, 'addr', 'add', `${addr}/32`, 'dev', 'eth0');
  ip('-n', ns, 'link', 'set', 'eth0', 'up');
  ip('-n', ns, 'route', 'add', 'default', 'via', gateway, 'dev', 'eth0', 'onlink');
  ip('-n', ns, 'neigh', 'add', gateway, 'lladdr', host.address, 'dev', 'eth0', 'nud', 'permanent');
  // replace, not add: a /32 left behind by an earlier run that was killed before its cleanup (its
  // lxc gone with it or not) must not fail this one; the pool of each test file is its own.
  ip('route', 'replace', `${addr}/32`, 'dev', hostIf, 'scope', 'link');
  if (v6) {
    writeFileSync('/proc/sys/net/ipv6/conf/all/forwarding', '1');
    ip('-n', ns, '-6', 'addr', 'add', `${v6.ip}/128`, 'dev', 'eth0', 'nodad');
    ip('-n', ns, '-6', 'route', 'add', 'default', 'via', v6.gateway, 'dev', 'eth0', 'onlink');
    ip('-n', ns, '-6', 'neigh', 'add', v6.gateway, 'lladdr', host.address, 'dev', 'eth0', 'nud', 'permanent');
    ip('-6', 'route', 'replace', `${v6.ip}/128`, 'dev', hostIf);
  }
  const traffic = new TrafficAgent(ns);
  c.teardown(() => traffic.stop());
  return { name, ns, ip: addr, hostIf, ifIndex: host.ifindex, mac: link(ns, 'eth0').address, hostMac: host.address, traffic, ...(v6 ? { ipv6: v6.ip } : {}) };
}

/** Allocates an address from the agent's IPAM (as the CNI plugin does) and creates the pod with it. */
export async function allocatePod(c: Cleanup, client: CelliumClient, name: string, opts: { dualStack?: boolean } = {}): Promise<Pod> {
  const res = await client.ipamAllocate({ family: 'ipv4', owner: `default/${name}` });
  const v6 = opts.dualStack ? (await client.ipamAllocate({ family: 'ipv6', owner: `default/${name}` })).ipv6 : undefined;
  return createPod(c, name, res.ipv4!.ip!, res.ipv4!.gateway!, v6 ? { ip: v6.ip!, gateway: v6.gateway! } : undefined);
}

/** The change request the CNI plugin sends for a pod: `PUT /v1/endpoint/0` with sync-build-endpoint. */
export function endpointRequest(pod: Pod, labels: readonly string[]): EndpointChangeRequest {
  return {
    'container-id': `dpbpf-${pod.name}-${pod.hostIf}`,
    'container-interface-name': 'eth0',
    'interface-name': pod.hostIf,
    'interface-index': pod.ifIndex,
    mac: pod.mac,
    'host-mac': pod.hostMac,
    addressing: { ipv4: pod.ip, ...(pod.ipv6 ? { ipv6: pod.ipv6 } : {}) },
    'k8s-pod-name': pod.name,
    'k8s-namespace': 'default',
    labels: [...labels],
    state: 'waiting-for-identity',
    'sync-build-endpoint': true,
  };
}

/** Whether a TCP connection from `from` to `to`:`port` reaches the server (real packets through both programs). */
export function connects(from: Pod, to: Pod, port: number): Promise<boolean> {
  return exchange('tcp', from.traffic, to.traffic, from.ip, to.ip, port, 1500);
}

/** A CiliumNetworkPolicy on `app=server`, written to a file in `dir`; returns the path. */
export function policyFile(dir: string, name: string, spec: Record<string, unknown>): string {
  const file = join(dir, `${name}.json`);
  const cnp = { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace: 'default' }, spec: { endpointSelector: { matchLabels: { app: 'server' } }, ...spec } };
  writeFileSync(file, JSON.stringify(cnp));
  return file;
}

/** Ingress rule: `app=<from>` may reach TCP `port`. */
export function tcpFrom(from: string, port: number): Record<string, unknown> {
  return { fromEndpoints: [{ matchLabels: { app: from } }], toPorts: [{ ports: [{ port: String(port), protocol: 'TCP' }] }] };
}

/** Runs the CLI in-process against `socketPath`; exit code and output. */
export async function cli(socketPath: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['--socket-path', socketPath, ...args], {
    stdout: (s) => out.push(s), stderr: (s) => err.push(s), readFile: (p) => readFile(p, 'utf8'), env: {},
  });
  return { code, out: out.join(''), err: err.join('') };
}

/** Each endpoint's state, realized policy revision and last log entries (diagnostics for a failed wait). */
export async function endpointsDiag(client: CelliumClient): Promise<string[]> {
  const out: string[] = [];
  for (const e of await client.listEndpoints()) {
    const log = (await client.getEndpointLog(e.id)).slice(-4).map((l) => `${l.timestamp ?? ''} ${l.state ?? ''} ${l.message ?? ''}`);
    out.push(`endpoint ${e.id} ${e.status.state} realized revision ${e.status.policy?.realized?.['policy-revision'] ?? '-'}: ${log.join(' | ')}`);
  }
  return out;
}

/** Programs attached to the pod's host interface, per hook (tcx links plus a legacy filter). */
export function attachedCount(pod: Pod): { from_container: number; to_container: number } {
  const p = endpointPrograms(pod.ifIndex);
  const n = (h: { tcx: number[]; legacy?: number }): number => h.tcx.length + (h.legacy !== undefined ? 1 : 0);
  return { from_container: n(p.from_container), to_container: n(p.to_container) };
}

/** Which of the endpoint's pins exist under the BPF root. */
export function endpointPins(root: string, id: number): { policy: boolean; from_container: boolean; to_container: boolean } {
  return {
    policy: existsSync(policyMapPath(root, id)),
    from_container: existsSync(lxcLinkPath(root, id, 'from_container')),
    to_container: existsSync(lxcLinkPath(root, id, 'to_container')),
  };
}

/** cellium_lxc read from the kernel: IP -> endpoint id. */
export function lxcEntries(root: string): Map<string, number> {
  const m = openLxcMap(root);
  try {
    return new Map(m.entries().map(([k, v]) => [k, v.endpointId]));
  } finally {
    m.close();
  }
}

/** Polls `check` every `stepMs` until it is true or `ms` passed; its last answer. */
export async function until(check: () => boolean | Promise<boolean>, ms: number, stepMs = 100): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** Why the tests that run the built `cellium-agent` process skip here (as skipReason, or dist/ not built), or false. */
export function agentProcessSkip(): string | false {
  return skipReason() || (existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js')) ? false : 'dist/ not built: run npm run build (npm test builds it)');
}

/** A `cellium-agent` process (bin/cellium-agent.js, built dist/); killed at cleanup if still running. */
export function spawnAgent(c: Cleanup, args: string[]): { proc: ChildProcess; exited: Promise<void>; log: () => string } {
  const proc = spawn(process.execPath, [AGENT_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d: Buffer): void => {
    log = (log + d.toString()).slice(-200_000); // enough for a start's log lines, one per swept interface included
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  c.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  });
  return { proc, exited, log: () => log };
}

/** A continuous `ping -i <interval>` from a pod: the replies and their icmp_seq numbers. */
export interface Ping {
  replies(): number;
  /** icmp_seq of every reply, in arrival order. */
  seqs(): readonly number[];
  /** Whether ping is still running. */
  running(): boolean;
  /** Stops ping (SIGINT) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts pinging `to` from `from` every `intervalS` seconds until stopped (or cleanup). */
export function startPing(c: Cleanup, from: Pod, to: Pod, intervalS = 0.2): Ping {
  const proc = spawn('ip', ['netns', 'exec', from.ns, 'ping', '-n', '-i', String(intervalS), to.ip], { stdio: ['ignore', 'pipe', 'ignore'] });
  const seqs: number[] = [];
  let rest = '';
  proc.stdout.on('data', (d: Buffer) => {
    const lines = (rest + d.toString()).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) {
      const m = / bytes from .*icmp_seq=(\d+)/.exec(l);
      if (m) seqs.push(Number(m[1]));
    }
  });
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  c.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  });
  return {
    replies: () => seqs.length,
    seqs: () => seqs,
    running: () => proc.exitCode === null && proc.signalCode === null,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGINT');
      await exited;
    },
  };
}

/** An agent process's setup: its own BPF root, state directory and socket, and a client on it. */
export interface AgentProcess {
  readonly root: string;
  readonly dir: string;
  readonly socketPath: string;
  readonly client: CelliumClient;
  /** Spawns the agent (bpf datapath, the pool, prune every second, no socket load balancing, plus the extra flags and then `more`, which win). */
  start(more?: readonly string[]): ReturnType<typeof spawnAgent>;
  /** Waits (up to 60 s) until the spawned agent serves the API; false when it exited or never did. */
  up(agent: ReturnType<typeof spawnAgent>): Promise<boolean>;
}

/** Sets up an agent process for test `name` on `pool` (see AgentProcess). */
export function agentProcess(c: Cleanup, name: string, pool: string, extraArgs: readonly string[] = []): AgentProcess {
  const root = bpfRoot(c);
  const dir = tempDir(c, name);
  const socketPath = join(dir, 'cellium.sock');
  const args = [
    `--socket-path=${socketPath}`, `--state-dir=${join(dir, 'state')}`, `--cni-delete-queue-dir=${join(dir, 'q')}`,
    `--bpf-root=${root}`, `--ipv4-range=${pool}`, '--datapath-mode=bpf', '--bpf-map-prune-interval=1s',
    // socket load balancing off unless the test asks (its default is the machine's root cgroup)
    '--bpf-lb-sock=false', ...extraArgs,
  ];
  const client = new CelliumClient({ socketPath });
  c.teardown(() => client.close());
  return {
    root, dir, socketPath, client,
    start: (more = []) => spawnAgent(c, [...args, ...more]),
    up: (a) => until(async () => a.proc.exitCode === null && (await client.listEndpoints().then(() => true, () => false)), 60000, 50),
  };
}
