/** Configuration of the loadbalancer cell (Cilium's --bpf-lb-* flags). */
import { int, oneOf, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Maglev table sizes Cilium accepts (primes, so every backend's permutation covers the table). */
export const MAGLEV_TABLE_SIZES = [251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65521, 131071] as const;

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
  serviceNoBackendResponse: oneOf(['reject', 'drop'] as const, 'reject', 'What a packet to a service without backends gets: reject (ICMP port unreachable; IPv4, IPv6 drops) or drop'),
};

/** The resolved loadbalancer configuration. */
export type LBConfig = ValuesOf<typeof lbConfigSchema>;

/** Token for the loadbalancer configuration. */
export const LBConfigToken = token<LBConfig>('LBConfig');
