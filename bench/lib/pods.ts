/**
 * The node and pods of the packet-path benches (datapath-traffic, lb-traffic), plumbed the way the
 * CNI plugin plumbs them: a node namespace with forwarding on, and per pod a namespace, a veth
 * (lxc… in the node, eth0 in the pod), a /32 address, a default route via the gateway with a
 * permanent neighbour entry, and the node's host route to the pod.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';

/** `ip …`, its output. */
export const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8' });

/** A bench pod: its namespace, its host-side veth in the node and its address. */
export interface BenchPod {
  readonly ns: string;
  readonly lxc: string;
  readonly addr: string;
}

/** Creates the node namespace and the pods. */
export function podTopology(node: string, pods: readonly BenchPod[], gateway: string): void {
  ip('netns', 'add', node);
  ip('-n', node, 'link', 'set', 'lo', 'up');
  execFileSync('ip', ['netns', 'exec', node, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  for (const p of pods) {
    ip('netns', 'add', p.ns);
    ip('-n', node, 'link', 'add', p.lxc, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', p.ns);
    ip('-n', node, 'link', 'set', p.lxc, 'up');
    const mac = (JSON.parse(ip('-n', node, '-j', 'link', 'show', p.lxc)) as { address: string }[])[0]!.address;
    ip('-n', p.ns, 'link', 'set', 'lo', 'up');
    ip('-n', p.ns, 'addr', 'add', `${p.addr}/32`, 'dev', 'eth0');
    ip('-n', p.ns, 'link', 'set', 'eth0', 'up');
    ip('-n', p.ns, 'route', 'add', 'default', 'via', gateway, 'dev', 'eth0', 'onlink');
    ip('-n', p.ns, 'neigh', 'add', gateway, 'lladdr', mac, 'dev', 'eth0', 'nud', 'permanent');
    ip('-n', node, 'route', 'add', `${p.addr}/32`, 'dev', p.lxc, 'scope', 'link');
  }
}

/** Deletes the namespaces (those never created are skipped) and the BPF root. */
export function removeTopology(namespaces: readonly string[], bpfRoot: string): void {
  for (const ns of namespaces) {
    try {
      ip('netns', 'del', ns);
    } catch {
      // not created
    }
  }
  rmSync(bpfRoot, { recursive: true, force: true });
}
