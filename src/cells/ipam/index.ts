/**
 * The IPAM cell (module `ipam`): the node's IPv4/IPv6 pools from `--ipv4-range`/`--ipv6-range`,
 * allocation with owners and expiration, release and restore. Provides IPAMToken.
 */
export * from './types.js';
export { IPAMError, type IPAMErrorCode } from './errors.js';
export { IPAMConfigToken, ipamConfigSchema, type IPAMConfig } from './config.js';
export { NodeIPAM } from './ipam.js';
export { ipamSummary, type IPAMSummary } from './summary.js';
export { parseAddr, formatAddr, canonicalAddr, parseCidr, formatCidr, cidrContains, cidrContainsAddr, type Addr, type Cidr } from '../../lib/addr.js';
export * from './cell.js';
