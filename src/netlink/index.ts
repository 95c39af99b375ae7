/** rtnetlink for the CNI server: links, veths, namespaces, addresses, routes, neighbours, sysctls. */
export { Netlink, sysctlPath, watchAddresses, withNetlink, type AddressWatch } from './netlink.js';
export { readSysctl, writeSysctl } from './sysctl.js';
export { applyNetlinkSteps, type NetlinkStep } from './steps.js';
export { NetlinkError, errnoName } from './errors.js';
export { addonPath } from './native.js';
export { probeNetns, type NetnsKind, type NetnsProbe } from './netns-probe.js';
export * from './types.js';
