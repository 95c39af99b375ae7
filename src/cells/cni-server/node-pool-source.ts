/**
 * The node pool as an address source (`--ipam=cluster-pool`, the default): one address per
 * configured family from the agent's IPAM, owner the pod (`ns/name`, else the container id),
 * expiring until the endpoint confirms them; each recorded in the ledger so a DEL or GC can give
 * back what no endpoint took over. A netconf `ipam` section is ignored, with one warning per
 * network name.
 */
import type { Family, IPAllocation } from '../ipam/types.js';
import type { ConfiguredSource, Undo, VethAddressing } from './address-source.js';
import type { CniDeps } from './deps.js';
import { releaseLedgerIPs, removeAttachment } from './del.js';
import { CelliumCniCode, CniFailure, quoteValue } from './errors.js';
import { attachmentKey } from './ledger.js';
import type { ParsedCall } from './netconf.js';

/** How long an ADD's IPs wait for their endpoint before IPAM takes them back (agent crash mid-ADD). */
export const ADD_IP_EXPIRATION_MS = 10 * 60_000;

/** The IPAM owner of an attachment's IPs: the pod (`ns/name`) when known, else the container id. */
export function ipOwner(call: ParsedCall): string {
  const { podNamespace, podName } = call.args;
  return podNamespace && podName ? `${podNamespace}/${podName}` : call.req.containerId;
}

/** The network names whose ignored `ipam` section was already logged, per logger. */
const warned = new WeakMap<object, Set<string>>();

/** The agent's own pools. */
export class NodePoolSource implements ConfiguredSource {
  readonly kind = 'node-pool';

  constructor(
    private readonly d: CniDeps,
    private readonly call: ParsedCall,
  ) {}

  /** See ConfiguredSource: an `ipam` section is ignored, logged once per network name. */
  prepare(): void {
    const { d, call } = this;
    if ((JSON.parse(call.req.stdin) as Record<string, unknown>).ipam === undefined) return;
    const seen = warned.get(d.log) ?? new Set<string>();
    warned.set(d.log, seen);
    if (seen.has(call.conf.name)) return;
    seen.add(call.conf.name);
    d.log.warn({ network: call.conf.name }, `network ${quoteValue(call.conf.name)} has an "ipam" section, which is ignored: addresses come from the agent's pool (--ipam=cluster-pool); start the agent with --ipam=delegated-plugin to use the plugin`);
  }

  /** See ConfiguredSource: one address per configured family (code 101 without a pool or a free address). */
  async acquire(undo: Undo): Promise<VethAddressing> {
    this.prepare();
    const { d, call } = this;
    const owner = ipOwner(call);
    const key = attachmentKey(call.req.containerId, call.req.ifName);
    const families = d.ipam.status().map((p) => p.family);
    if (families.length === 0) throw new CniFailure(CelliumCniCode.IPAllocationFailed, 'IPAM has no pool: start the agent with --ipv4-range or --ipv6-range');
    const got: IPAllocation[] = [];
    for (const family of ['ipv4', 'ipv6'] as Family[]) {
      if (!families.includes(family)) continue;
      let a: IPAllocation;
      try {
        a = d.ipam.allocateNext(family, owner, { expirationMs: ADD_IP_EXPIRATION_MS });
      } catch (err) {
        throw new CniFailure(CelliumCniCode.IPAllocationFailed, `allocating an ${family} address for ${owner}: ${(err as Error).message}`);
      }
      d.ledger.record({ ip: a.ip, owner, attachment: key });
      undo.push([`release ${a.ip}`, () => releaseLedgerIPs(d, key)]);
      got.push(a);
    }
    return { addresses: got, pooled: got.map((a) => ({ ip: a.ip, owner: a.owner })) };
  }

  /** See ConfiguredSource: Cellium's CHECK already compared the endpoint's addresses; the pool has nothing to ask. */
  check(): Promise<void> {
    return Promise.resolve();
  }

  /** See ConfiguredSource: removing the endpoint and the ledger's entries gives the addresses back. */
  remove(reason: string): Promise<void> {
    return removeAttachment(this.d, this.call.req.containerId, this.call.req.ifName, reason);
  }
}
