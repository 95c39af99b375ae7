// Helpers of the privileged end-to-end tests: the agent's real hive in this process (control plane,
// API server on a temporary socket, CNI server over the real netlink addon; memory datapath unless
// told otherwise), the built shim run like a runtime runs it, and unique network namespaces.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Hive, silentLogger, testHive, type Cell, type TestHive, type TestLike } from '../../src/hive/index.js';
import { apiServerCell } from '../../src/cells/api-server/index.js';
import { cniServerCell, CniServerToken } from '../../src/cells/cni-server/index.js';
import { buildShim, runShim, SHIM, type ShimRun } from '../cni-shim/run-shim.js';
import { createNetns, uniq } from '../root-netlink/netns.js';
import { CONTROL_PLANE, tempDir } from '../cni-server/helpers.js';

export { SHIM, buildShim, uniq };
export { ip, ipJson } from '../root-netlink/netns.js';


/** A running agent. */
export interface Agent {
  readonly h: TestHive;
  readonly socketPath: string;
  readonly queueDir: string;
  readonly dir: string;
}

/** Starts the agent's cells with the CNI server; stopped when the test ends. `pool` must be unique per test file. */
export async function startAgent(t: TestLike, pool: string, opts: { config?: Record<string, unknown>; cells?: readonly Cell[]; base?: readonly Cell[] } = {}): Promise<Agent> {
  const dir = tempDir(t, 'e2e');
  const socketPath = join(dir, 'cellium.sock');
  const queueDir = join(dir, 'delete-queue');
  const base = opts.base ?? [...CONTROL_PLANE, apiServerCell, cniServerCell];
  const cells = [...base, ...(opts.cells ?? [])];
  // with the BPF datapath cell (found by the flags the cells declare: agentCells nests it in a
  // module), pins go to a BPF root of this test's own (removed after the agent stopped), and
  // socket load balancing stays off (it would attach to the machine's root cgroup)
  const flags = new Set(new Hive(cells, { logger: silentLogger() }).config.entries().map((e) => e.flag));
  const bpfRoot = flags.has('bpf-root') ? `/sys/fs/bpf/cellium-e2e-${uniq()}` : undefined;
  // --bpf-lb-sock exists only with the load balancer cell (an unknown value fails the hive)
  const sockOff = bpfRoot && flags.has('bpf-lb-sock') ? { 'bpf-lb-sock': false } : {};
  const h = await testHive(t, cells, {
    config: { 'state-dir': join(dir, 'state'), 'socket-path': socketPath, 'cni-delete-queue-dir': queueDir, 'ipv4-range': pool, ...(bpfRoot ? { 'bpf-root': bpfRoot, ...sockOff } : {}), ...opts.config },
  });
  if (bpfRoot) t.teardown(() => rmSync(bpfRoot, { recursive: true, force: true }));
  await h.get(CniServerToken).whenReady();
  return { h, socketPath, queueDir, dir };
}

/** A network namespace removed when the test ends. */
export function netns(t: TestLike, prefix: string): { name: string; path: string } {
  const ns = createNetns(`${prefix}-${uniq()}`);
  t.teardown(ns.remove);
  return ns;
}

/** What a CNI call needs besides the command. */
export interface CallEnv {
  readonly containerId: string;
  readonly netns?: string;
  readonly ifName?: string;
  readonly args?: string;
}

/** The conflist-style single netconf the tests use, pointing the shim at the agent's socket. */
export function conf(agent: Agent, extra: Record<string, unknown> = {}, cniVersion = '1.0.0'): Record<string, unknown> {
  return { cniVersion, name: 'cellium', type: 'cellium-cni', 'socket-path': agent.socketPath, ...extra };
}

/** Runs the shim with CNI variables and the netconf on stdin, as a runtime does. */
export function cni(command: string, env: CallEnv, netconf: Record<string, unknown> | string, extraEnv: Record<string, string> = {}): Promise<ShimRun> {
  const vars: Record<string, string> = {
    CNI_COMMAND: command,
    CNI_CONTAINERID: env.containerId,
    CNI_IFNAME: env.ifName ?? 'eth0',
    CNI_PATH: '/opt/cni/bin',
    ...(env.netns ? { CNI_NETNS: env.netns } : {}),
    ...(env.args !== undefined ? { CNI_ARGS: env.args } : {}),
    ...extraEnv,
  };
  return runShim(vars, typeof netconf === 'string' ? netconf : JSON.stringify(netconf));
}
