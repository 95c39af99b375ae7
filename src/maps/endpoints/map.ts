/**
 * The shared bpf_lxc's maps opened at their pins under the BPF root: cellium_endpoints (typed) and
 * cellium_policy_maps, whose slot of an endpoint names (by fd on write, by map id on read) the
 * endpoint's pinned policy map.
 */
import { join } from 'node:path';
import { ENDPOINTS_MAP, POLICY_MAPS_MAP } from '../../datapath/map-names.js';
import { BpfMap } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import { TypedMap } from '../../bpf/typed-map.js';
import { ENDPOINTS_MAP_SPEC, POLICY_MAPS_MAP_SPEC, endpointInfoCodec, u32Codec, type EndpointInfo } from './layout.js';

/** cellium_endpoints: host interface index -> endpoint constants. */
export type EndpointsMap = TypedMap<number, EndpointInfo>;

/** Opens (or creates and pins) cellium_endpoints under the BPF root. */
export function openEndpointsMap(bpfRoot: string): EndpointsMap {
  return new TypedMap(BpfMap.openOrCreate(join(bpfRoot, ENDPOINTS_MAP), ENDPOINTS_MAP_SPEC), u32Codec, endpointInfoCodec);
}

/** cellium_policy_maps: endpoint ID -> that endpoint's policy map. */
export class PolicyMapsMap {
  private constructor(
    /** The array of maps. */
    readonly map: BpfMap,
  ) {}

  /** Opens (or creates and pins) cellium_policy_maps under the BPF root. */
  static open(bpfRoot: string): PolicyMapsMap {
    return new PolicyMapsMap(BpfMap.openOrCreate(join(bpfRoot, POLICY_MAPS_MAP), POLICY_MAPS_MAP_SPEC));
  }

  /** Points an endpoint's slot at the policy map `policyMapFd` (atomic for the programs). */
  set(endpointId: number, policyMapFd: number): void {
    const fd = Buffer.alloc(4);
    hostOrder.u32.write(fd, policyMapFd, 0);
    this.map.update(slot(endpointId), fd);
  }

  /** The map id in an endpoint's slot, or undefined when it is empty. */
  get(endpointId: number): number | undefined {
    const v = this.map.lookup(slot(endpointId));
    return v ? hostOrder.u32.read(v, 0) : undefined;
  }

  /** Empties an endpoint's slot; false when it was empty. */
  delete(endpointId: number): boolean {
    return this.map.delete(slot(endpointId));
  }

  /** Endpoint IDs whose slot holds a map. */
  ids(): number[] {
    return [...this.map.keys()].map((k) => hostOrder.u32.read(k, 0)).filter((id) => this.get(id) !== undefined);
  }

  /** Closes the fd (the pinned map stays). */
  close(): void {
    this.map.close();
  }
}

function slot(endpointId: number): Buffer {
  const k = Buffer.alloc(4);
  hostOrder.u32.write(k, endpointId, 0);
  return k;
}
