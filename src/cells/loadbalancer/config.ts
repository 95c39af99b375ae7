/** Configuration of the loadbalancer cell (Cilium's --bpf-lb-* flags, socket load balancing's --bpf-lb-sock and --cgroup-root). */
import { bool, int, list, oneOf, string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Maglev table sizes Cilium accepts (primes, so every backend's permutation covers the table). */
export const MAGLEV_TABLE_SIZES = [251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65521, 131071] as const;

/** The lowest and highest port a NodePort frontend may use. */
export type NodePortRange = readonly [min: number, max: number];

/** Kubernetes' default --service-node-port-range, Cilium's --node-port-range default. */
export const DEFAULT_NODE_PORT_RANGE: NodePortRange = [30000, 32767];

/** Parses `min,max` (or `min-max`): two ports, min <= max. */
function parseNodePortRange(raw: unknown): NodePortRange {
  const parts = typeof raw === 'string' ? raw.split(/[,-]/).map((p) => p.trim()) : list([], '').parse(raw);
  const [min, max] = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : NaN));
  if (parts.length !== 2 || !(min! >= 1 && max! <= 65535 && min! <= max!)) throw new Error(`expected min,max: two ports 1..65535 with min <= max (e.g. 30000,32767), got ${JSON.stringify(raw)}`);
  return [min!, max!];
}

/** Schema of the loadbalancer configuration. */
export const lbConfigSchema = {
  bpfLbAlgorithm: oneOf(['random', 'maglev'] as const, 'random', 'How a new flow picks its backend: random, or Maglev consistent hashing (a backend change remaps about 1/N of the flows)'),
  bpfLbMaglevTableSize: {
    ...int(16381, `Entries of each service's Maglev lookup table (a prime: ${MAGLEV_TABLE_SIZES.join(', ')})`),
    parse(raw: unknown): number {
      const n = int(16381, '').parse(raw);
      if (!(MAGLEV_TABLE_SIZES as readonly number[]).includes(n)) throw new Error(`expected one of ${MAGLEV_TABLE_SIZES.join(', ')}, got ${n}`);
      return n;
    },
  },
  bpfLbMapMax: int(65536, 'Entries of the load-balancing maps (services, backends, reverse NAT, affinity); also the number of service IDs', { min: 16, max: 1 << 24 }),
  bpfLbSock: bool(true, 'Socket-level load balancing for the node\'s own processes: cgroup programs (connect, sendmsg, recvmsg, getpeername) on --cgroup-root translate a connect to a service frontend into a backend (BPF datapath only)'),
  cgroupRoot: {
    ...string('', 'The cgroup v2 directory the socket load-balancing programs attach to (every process in it and below it); empty: the cgroup v2 mount of /proc/mounts (the node\'s root cgroup)'),
    parse(raw: unknown): string {
      const s = string('', '').parse(raw).trim();
      if (s && !s.startsWith('/')) throw new Error(`expected an absolute path to a cgroup v2 directory (e.g. /sys/fs/cgroup), got ${JSON.stringify(s)}`);
      return s.length > 1 ? s.replace(/\/+$/, '') : s;
    },
  },
  bpfSockRevMapMax: int(262144, 'Entries of the reverse-socket maps of socket load balancing (cellium_lb4_reverse_sk, cellium_lb6_reverse_sk; LRU)', { min: 16, max: 1 << 24 }),
  nodePortRange: {
    ...list([], 'The ports NodePort frontends may use, min,max (Cilium\'s --node-port-range; Kubernetes allocates node ports from the same range): a node port takes its port on every address of the node, loopback included, for every process socket LB translates'),
    default: DEFAULT_NODE_PORT_RANGE,
    parse: parseNodePortRange,
    format: (v: NodePortRange): string => v.join(','),
  },
  serviceNoBackendResponse: oneOf(['reject', 'drop'] as const, 'reject', 'What a packet to a service without backends gets: reject (ICMP port unreachable; IPv4, IPv6 drops) or drop'),
};

/** The resolved loadbalancer configuration. */
export type LBConfig = ValuesOf<typeof lbConfigSchema>;

/** Token for the loadbalancer configuration. */
export const LBConfigToken = token<LBConfig>('LBConfig');
