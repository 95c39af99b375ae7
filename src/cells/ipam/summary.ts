/** The IPAM summary both the status (`GET /healthz`) and `GET /ipam` show, in the shape of Cilium's IPAMStatus. */
import type { AllocationStatus, PoolStatus } from './types.js';

/** Cilium's IPAMStatus fields, as Cellium fills them. */
export interface IPAMSummary {
  /** Every address in use -> its owner (out-of-pool ones included). */
  readonly allocations: Record<string, string>;
  /** The IPv4 pool's CIDR (none or one). */
  readonly ipv4: string[];
  /** The IPv6 pool's CIDR (none or one). */
  readonly ipv6: string[];
  /** `<used>/<size> allocated`, with `, <n> out of pool` when endpoints use addresses outside the pools. */
  readonly status: string;
}

/** The summary of the pools and allocations. */
export function ipamSummary(pools: readonly PoolStatus[], allocations: readonly AllocationStatus[]): IPAMSummary {
  const used = pools.reduce((n, p) => n + p.used, 0);
  const size = pools.reduce((n, p) => n + p.size, 0);
  const outside = allocations.filter((a) => a.pool === undefined).length;
  return {
    allocations: Object.fromEntries(allocations.map((a) => [a.ip, a.owner])),
    ipv4: pools.filter((p) => p.family === 'ipv4').map((p) => p.cidr),
    ipv6: pools.filter((p) => p.family === 'ipv6').map((p) => p.cidr),
    status: `${used}/${size} allocated${outside ? `, ${outside} out of pool` : ''}`,
  };
}
