/** The shared bpf_lxc's maps (cellium_endpoints, cellium_policy_maps): layout and open. */
export * from './layout.js';
export { openEndpointsMap, PolicyMapsMap, type EndpointsMap } from './map.js';
