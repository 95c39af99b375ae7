/**
 * The delegated plugin as an address source (`--ipam=delegated-plugin`, as cilium-cni's
 * allocateIPsWithDelegatedPlugin): the addresses, gateways and routes the IPAM plugin of the
 * netconf's `ipam` section gives (run by delegated-ipam.ts). The attachment is recorded
 * (ipam-records.ts) before the plugin's ADD and forgotten only once its DEL succeeded; the endpoint
 * carries `cellium.io/ipam-source: delegated-plugin:<type>` so the node pool never claims the
 * addresses.
 */
import type { ConfiguredSource, PodRoute, Undo, VethAddressing } from './address-source.js';
import { defaultRoutes, familyOf } from './address-source.js';
import type { CniDeps } from './deps.js';
import { removeAttachment } from './del.js';
import { delegatedAdd, delegatedCheck, delegatedDel, findPlugin, ipamPluginType } from './delegated-ipam.js';
import { CelliumCniCode, CniFailure, invalidConfig } from './errors.js';
import type { ParsedCall } from './netconf.js';
import type { PodAddress } from './plumbing.js';

const SOURCE_PREFIX = 'delegated-plugin:';

/** The endpoint property cellium.io/ipam-source of addresses the plugin `type` gave. */
export function ipamSourceOf(type: string): string {
  return `${SOURCE_PREFIX}${type}`;
}

/** The plugin an endpoint's cellium.io/ipam-source names, when a plugin gave its addresses. */
export function pluginOf(ipamSource: string | undefined): string | undefined {
  return ipamSource?.startsWith(SOURCE_PREFIX) ? ipamSource.slice(SOURCE_PREFIX.length) : undefined;
}

/** The netconf's IPAM plugin. */
export class DelegatedPluginSource implements ConfiguredSource {
  readonly kind = 'delegated-plugin';

  /** `type`: the plugin, when the caller read it already; else read from the netconf on first use. */
  constructor(
    private readonly d: CniDeps,
    private readonly call: ParsedCall,
    private type?: string,
  ) {}

  /** See ConfiguredSource: the netconf must name the plugin (code 7 naming `ipam` otherwise). */
  prepare(): void {
    this.plugin();
  }

  private plugin(): string {
    if (this.type) return this.type;
    const type = ipamPluginType(this.call.req.stdin);
    if (!type) throw invalidConfig('ipam', 'is required: the agent runs with --ipam=delegated-plugin, so the network configuration must name its IPAM plugin ("ipam": {"type": "host-local", ...})');
    this.type = type;
    return type;
  }

  /**
   * See ConfiguredSource: runs the plugin's ADD and takes its addresses, gateways and routes. The
   * attachment is recorded first and the plugin's DEL goes on the undo list before the ADD runs: a
   * plugin that allocated and then failed, timed out or printed an unusable result is still asked
   * to release (DEL is idempotent), and a release that fails stays recorded for the next GC.
   */
  async acquire(undo: Undo): Promise<VethAddressing> {
    const type = this.plugin();
    const { d, call } = this;
    const { containerId, ifName } = call.req;
    findPlugin(type, call.req.path); // a plugin that is not there took nothing: no record, no DEL
    await d.ipamRecords.write({ containerId, ifName, network: call.conf.name, plugin: type });
    undo.push([`IPAM plugin ${type} DEL`, () => this.release(type)]);
    const result = await delegatedAdd(type, call);
    const addresses: PodAddress[] = [];
    for (const ip of result.ips) {
      const family = familyOf(ip.address);
      if (addresses.some((a) => a.family === family)) continue; // one address per family, as the endpoint has
      const gateway = ip.gateway ?? result.routes.find((r) => r.gw && familyOf(r.gw) === family)?.gw;
      if (!gateway) throw new CniFailure(CelliumCniCode.IPAllocationFailed, `IPAM plugin ${type} gave ${ip.address} without a gateway: set one in the ipam section (e.g. ranges[].gateway)`);
      addresses.push({ ip: ip.address.split('/')[0]!, family, gateway });
    }
    const gw = (dst: string): string => addresses.find((a) => a.family === familyOf(dst.split('/')[0]!))?.gateway ?? '';
    const routes: PodRoute[] = result.routes.map((r) => ({ dst: r.dst, gw: r.gw ?? gw(r.dst) })).filter((r) => r.gw !== '');
    return { addresses, routes: routes.length ? routes : defaultRoutes(addresses), ipamSource: ipamSourceOf(type), pooled: [] };
  }

  /** See ConfiguredSource: the plugin's CHECK (CNI 0.4.0 and later). */
  check(): Promise<void> {
    return delegatedCheck(this.plugin(), this.call);
  }

  /**
   * See ConfiguredSource: the plugin releases after the interface is gone (cilium-cni's order), and
   * the record goes once it did.
   */
  async remove(reason: string): Promise<void> {
    const type = this.plugin();
    await removeAttachment(this.d, this.call.req.containerId, this.call.req.ifName, reason);
    await this.release(type);
  }

  /** The plugin's DEL, then the record (kept when the DEL fails, for the next GC). */
  private async release(type: string): Promise<void> {
    await delegatedDel(type, this.call);
    await this.d.ipamRecords.remove(this.call.req.containerId, this.call.req.ifName);
  }
}
