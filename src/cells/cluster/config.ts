/**
 * Configuration of the cluster cell: the cluster pool pod CIDRs are claimed from
 * (`--cluster-pool-ipv4-cidr`, `--cluster-pool-ipv4-mask-size`; in etcd with --kvstore, else in
 * CiliumNodes with Kubernetes; without it `--ipv4-range` is the node's fixed pool, and
 * `--cluster-pool-wait-timeout`) and Cilium's `--auto-direct-node-routes`.
 */
import { bool, duration, int, string, type Field, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';
import { parseCidr, formatCidr } from '../../lib/addr.js';
import { badClusterPool } from './errors.js';

function poolField(): Field<string> {
  const base = string('', 'Cluster pool of pod CIDRs (IPv4 CIDR): each node gets one /--cluster-pool-ipv4-mask-size of it (claimed in etcd with --kvstore, else given by the elected agent in its CiliumNode); empty: --ipv4-range is this node\'s fixed pool');
  return {
    ...base,
    parse(raw: unknown): string {
      const v = base.parse(raw).trim();
      if (v === '') return '';
      let c;
      try {
        c = parseCidr(v);
      } catch (err) {
        throw badClusterPool(v, (err as Error).message, err);
      }
      if (c.family !== 'ipv4' || !v.includes('/')) throw badClusterPool(v);
      return formatCidr(c);
    },
  };
}

/** Schema of the cluster configuration. */
export const clusterConfigSchema = {
  clusterPoolIpv4Cidr: poolField(),
  clusterPoolIpv4MaskSize: int(24, 'Prefix length of the pod CIDR each node claims from --cluster-pool-ipv4-cidr', { min: 8, max: 30 }),
  clusterPoolWaitTimeout: duration('50s', 'Kubernetes mode: how long the agent waits for the elected allocator to write its pod CIDR into its CiliumNode before it gives up (keep it below --hive-hook-timeout)'),
  autoDirectNodeRoutes: bool(false, 'Route every other node\'s pod CIDR via its node IP (nodes on one L2 network, native routing)'),
};

/** The resolved cluster configuration. */
export type ClusterConfig = ValuesOf<typeof clusterConfigSchema>;

/** Token for the cluster configuration. */
export const ClusterConfigToken = token<ClusterConfig>('ClusterConfig');
