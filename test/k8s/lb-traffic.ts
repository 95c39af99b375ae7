// Traffic and kernel-map helpers of the Services tests (test/k8s/services*.test.ts): listeners and
// connections in the test's pods, and the kernel's LB maps as `cellium bpf lb list` prints them.
import { cli, type Pod } from '../root-datapath-agent/fixtures.js';

/** Starts a listener in `pod` (`tcp` or `tcpecho`) on `addr` (default its IPv4 address); returns its id. */
export async function listen(pod: Pod, port: number, opts: { proto?: string; addr?: string } = {}): Promise<string> {
  const id = pod.traffic.nextId();
  pod.traffic.command(`listen ${opts.proto ?? 'tcp'} ${opts.addr ?? pod.ip} ${port} ${id}`);
  if (!(await pod.traffic.waitFor('ready', id, 10000))) throw new Error(`${pod.name} did not listen on ${opts.addr ?? pod.ip} ${port}`);
  return id;
}

/** Whether a TCP connection from `from` to `vip`:`port` is established. */
export async function connect(from: Pod, vip: string, port: number): Promise<boolean> {
  const id = from.traffic.nextId();
  from.traffic.command(`connect ${vip} ${port} - 1500 ${id}`);
  return (await from.traffic.waitFor(['connected', 'failed'], id, 6000)) === 'connected';
}

/** How many connections the listener `id` of `pod` accepted. */
export const hits = (pod: Pod, id: string): number => pod.traffic.output.split('\n').filter((l) => l === `got ${id}`).length;

/** A frontend of the kernel's LB maps and its backends. */
export interface LBEntry { service: string; backends: { backend: string }[] }

/** The kernel's LB maps (`cellium bpf lb list` on the agent's BPF root). */
export async function kernelLB(socketPath: string, root: string): Promise<LBEntry[]> {
  const r = await cli(socketPath, '-o', 'json', 'bpf', 'lb', 'list', '--bpf-root', root);
  if (r.code !== 0) throw new Error(`cellium bpf lb list: ${r.err}`);
  return JSON.parse(r.out) as LBEntry[];
}
