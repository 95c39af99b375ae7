// Helpers of the conntrack end-to-end tests: CiliumNetworkPolicies on any selector, a UDP request
// that tells an answer from an ICMP unreachable (ECONNREFUSED) and from silence, a TCP connection
// to an echo server, and a long-lived TCP stream whose echoes can be counted — all through the
// traffic agents of test/bpf/fixtures/traffic.mjs in the pods.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrafficAgent } from '../bpf/fixtures/topology.js';
import type { Cleanup, Pod } from './fixtures.js';

/** Small conntrack maps for test agents: the defaults preallocate about 200 MB of kernel memory per BPF root. */
export const SMALL_CT = { 'bpf-ct-global-tcp-max': 4096, 'bpf-ct-global-any-max': 4096 } as const;

/** A CiliumNetworkPolicy selecting `app=<app>`, written to `dir`; returns the file. */
export function appPolicy(dir: string, name: string, app: string, spec: Record<string, unknown>): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace: 'default' }, spec: { endpointSelector: { matchLabels: { app } }, ...spec } }));
  return file;
}

/** A rule's peer and ports: `app=<peer>` on the given `port/PROTO`s (e.g. `80/TCP`, `0/ICMP`). */
export function peerPorts(key: 'fromEndpoints' | 'toEndpoints', peer: string, ports: readonly string[]): Record<string, unknown> {
  return { [key]: [{ matchLabels: { app: peer } }], toPorts: [{ ports: ports.map((p) => ({ port: p.split('/')[0], protocol: p.split('/')[1] })) }] };
}

/** Starts a server of `kind` on the pod's address; returns its command ID (closed at cleanup). */
export async function serve(c: Cleanup, pod: Pod, kind: 'tcpecho' | 'udpecho' | 'tcp', port: number): Promise<string> {
  const id = pod.traffic.nextId();
  pod.traffic.command(`listen ${kind} ${pod.ip} ${port} ${id}`);
  if (!(await pod.traffic.waitFor('ready', id, 10000))) throw new Error(`${pod.name}: ${kind} server on ${port} did not start`);
  c.teardown(() => pod.traffic.command(`close ${id}`));
  return id;
}

/** A UDP request from `from` to `to`:`port`: answered, refused (an ICMP unreachable came back) or timeout. */
export async function ask(from: Pod, to: Pod, port: number, ms = 1500): Promise<'answered' | 'refused' | 'timeout'> {
  const id = from.traffic.nextId();
  from.traffic.command(`ask ${to.ip} ${port} ${from.ip} ${ms} ${id}`);
  const word = await from.traffic.waitFor(['answered', 'refused', 'timeout'], id, ms + 5000);
  return (word ?? 'timeout') as 'answered' | 'refused' | 'timeout';
}

/** A long-lived TCP connection from `from` to an echo server on `to`:`port`. */
export class Stream {
  private constructor(private readonly agent: TrafficAgent, readonly id: string) {}

  /** Opens it; resolves once connected (throws otherwise). */
  static async open(c: Cleanup, from: Pod, to: Pod, port: number): Promise<Stream> {
    const id = from.traffic.nextId();
    from.traffic.command(`stream ${to.ip} ${port} ${from.ip} ${id}`);
    if (!(await from.traffic.waitFor(['streaming', 'reset'], id, 5000)) || from.traffic.output.includes(`reset ${id} `)) {
      throw new Error(`${from.name} -> ${to.ip}:${port}: the stream did not connect`);
    }
    c.teardown(() => from.traffic.command(`stop ${id}`));
    return new Stream(from.traffic, id);
  }

  /** Echoes received so far. */
  async echoes(): Promise<number> {
    const before = this.agent.output.length;
    this.agent.command(`report ${this.id}`);
    const re = new RegExp(`^echoes ${this.id} (-?\\d+)$`, 'm');
    for (let i = 0; i < 200; i++) {
      const m = re.exec(this.agent.output.slice(before));
      if (m) return Number(m[1]);
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`stream ${this.id}: no report`);
  }

  /** How it broke (`ECONNRESET`, `closed`, …), or undefined while it is up. */
  broken(): string | undefined {
    return new RegExp(`^reset ${this.id} (\\S+)$`, 'm').exec(this.agent.output)?.[1];
  }
}

