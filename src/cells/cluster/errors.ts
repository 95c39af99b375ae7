/** Errors of the cluster cell, each naming the flag or the condition and the fix. */

/** What went wrong. */
export type ClusterErrorCode = 'config' | 'pool-exhausted';

/** A cluster error. */
export class ClusterError extends Error {
  override readonly name = 'ClusterError';
  constructor(
    readonly code: ClusterErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** --cluster-pool-ipv4-cidr is not an IPv4 CIDR. */
export function badClusterPool(value: string, why?: string, cause?: unknown): ClusterError {
  return new ClusterError('config', `--cluster-pool-ipv4-cidr=${JSON.stringify(value)}: ${why ? `${why}; ` : ''}give an IPv4 CIDR such as 10.0.0.0/8`, { cause });
}

/** The mask size is shorter than the pool's prefix. */
export function badMaskSize(mask: number, poolPrefix: number): ClusterError {
  return new ClusterError('config', `--cluster-pool-ipv4-mask-size=${mask} is shorter than the pool's /${poolPrefix}: give ${poolPrefix} or more`);
}

/** The cluster pool was asked for without a kvstore to claim in. */
export function clusterPoolNeedsKVStore(): ClusterError {
  return new ClusterError('config', '--cluster-pool-ipv4-cidr needs a kvstore to claim the node\'s pod CIDR in: add --kvstore=etcd --kvstore-opt=etcd.config=FILE, or use --ipv4-range for a fixed pool');
}

/** The IPAM in use cannot change its pool. */
export function ipamCannotSetPool(): ClusterError {
  return new ClusterError('config', 'the IPAM in use cannot take a pod CIDR from the cluster pool: use --ipv4-range');
}

/** Every subnet of the pool is claimed. */
export function poolExhausted(pool: string, mask: number): ClusterError {
  return new ClusterError('pool-exhausted', `the cluster pool ${pool} has no free /${mask} left: use a larger --cluster-pool-ipv4-cidr or a longer --cluster-pool-ipv4-mask-size, or remove nodes that are gone`);
}
