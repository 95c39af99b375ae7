/**
 * Names of the datapath maps, shared by both datapaths, the endpoint cell (ep_config.h) and the
 * map API (`GET /map/{name}`).
 */

/** The endpoints map: IP -> local endpoint. */
export const LXC_MAP = 'cellium_lxc';
/** The ipcache: CIDR -> identity. */
export const IPCACHE_MAP = 'cellium_ipcache';

/** The shared bpf_lxc's endpoints: host interface index -> the endpoint's constants. */
export const ENDPOINTS_MAP = 'cellium_endpoints';
/** The shared bpf_lxc's policy maps: endpoint ID -> its cellium_policy_<id> (a map of maps). */
export const POLICY_MAPS_MAP = 'cellium_policy_maps';

/** An endpoint's policy map: `cellium_policy_00042`. */
export function policyMapName(endpointId: number): string {
  return `cellium_policy_${String(endpointId).padStart(5, '0')}`;
}

/** The endpoint ID of a policy map name, or undefined when `name` is not one. */
export function endpointOfPolicyMap(name: string): number | undefined {
  const m = /^cellium_policy_(\d{5})$/.exec(name);
  return m ? Number(m[1]) : undefined;
}
