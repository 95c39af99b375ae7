/**
 * Chained addresses (generic-veth chaining): when the prevResult has an interface named CNI_IFNAME
 * in this sandbox, the previous plugin made the pod's interface and gave its addresses; the ADD
 * takes them as they are and answers with the prevResult, the host side added.
 */
import { CniErrorCode } from '../../cni/protocol.js';
import type { ChainedSource, EndpointAddress } from './address-source.js';
import { familyOf } from './address-source.js';
import { CniFailure } from './errors.js';
import type { ParsedCall } from './netconf.js';
import type { CniResultModel } from './result.js';

/** The prevResult interface this ADD chains onto: ifName inside this netns, when there is one (else -1). */
export function chainedInterfaceIndex(call: ParsedCall): number {
  const prev = call.conf.prevResult;
  if (!prev) return -1;
  return prev.interfaces.findIndex((i) => i.name === call.req.ifName && (i.sandbox === undefined || i.sandbox === call.req.netns));
}

/** The prevResult's addresses of interface `index`. */
export class PrevResultSource implements ChainedSource {
  readonly kind = 'chained';
  private readonly prev: CniResultModel;

  constructor(
    private readonly call: ParsedCall,
    private readonly index: number,
  ) {
    this.prev = call.conf.prevResult!;
  }

  /** See ChainedSource. */
  addresses(): EndpointAddress[] {
    const ips = this.prev.ips.filter((ip) => ip.interface === undefined || ip.interface === this.index);
    if (ips.length === 0) throw new CniFailure(CniErrorCode.InvalidConfig, `invalid network configuration: prevResult.ips has no address for interface ${this.call.req.ifName}`);
    return ips.map((ip) => ({ ip: ip.address.split('/')[0]!, family: familyOf(ip.address) }));
  }

  /** See ChainedSource. */
  result(host: { readonly name: string; readonly mac: string }): CniResultModel {
    const prev = this.prev;
    const known = prev.interfaces.some((i) => i.name === host.name && i.sandbox === undefined);
    return known ? prev : { ...prev, interfaces: [...prev.interfaces, { name: host.name, mac: host.mac }] };
  }
}
