/** Checks of what a source hands the service manager; each failure names the field and the fix. */
import { canonicalIP, isIPv6, validPort } from './addr.js';
import { invalidBackend, invalidField, invalidFrontend } from './errors.js';
import { BACKEND_STATES, SERVICE_TYPES, type ServiceUpsert } from './types.js';
import { parseCidr } from '../../lib/addr.js';
import { isSurrogateAddress, whyNotBackendAddress, whyNotFrontendAddress } from './address-use.js';
import { DEFAULT_NODE_PORT_RANGE, type NodePortRange } from './config.js';

const PROTOS = ['tcp', 'udp', 'any'];

/**
 * Throws LBError when the upsert cannot be used (pointers relative to the upsert object). A NodePort
 * frontend's port must lie in `nodePorts` (--node-port-range): on the surrogate it takes that port on
 * every address of the node, loopback included, for every process socket LB translates. What
 * depends on the node's addresses is checked by collisions.ts.
 */
export function validateUpsert(u: ServiceUpsert, nodePorts: NodePortRange = DEFAULT_NODE_PORT_RANGE): void {
  const s = u.service;
  if (!s.key) throw invalidField('/service/key', 'a service needs a key', 'give the service a name');
  if (!Number.isInteger(s.sessionAffinityTimeoutSec) || s.sessionAffinityTimeoutSec < 0 || s.sessionAffinityTimeoutSec > 86400) {
    throw invalidField('/service/sessionAffinityTimeoutSec', `${String(s.sessionAffinityTimeoutSec)} is not a timeout`, 'give seconds between 0 and 86400');
  }
  for (const [i, c] of s.sourceRanges.entries()) {
    try {
      parseCidr(c);
    } catch {
      throw invalidField(`/service/sourceRanges/${i}`, `${JSON.stringify(c)} is not a CIDR`, 'give CIDRs such as 10.0.0.0/8');
    }
  }
  for (const [i, f] of u.frontends.entries()) {
    const at = `/frontends/${i}`;
    if (canonicalIP(f.address.ip) !== f.address.ip) throw invalidFrontend(`${at}/address/ip`, `${JSON.stringify(f.address.ip)} is not a canonical IP address`, 'give an IPv4 or IPv6 address such as 10.96.0.10');
    const notFe = whyNotFrontendAddress(f.address.ip, f.type);
    if (notFe) throw invalidFrontend(`${at}/address/ip`, `${f.address.ip} cannot be a service frontend of type ${String(f.type)}: ${notFe}`, surrogateFix(f.address.ip));
    if (!validPort(f.address.port, !isSurrogateAddress(f.address.ip))) throw invalidFrontend(`${at}/address/port`, `${String(f.address.port)} is not a port`, isSurrogateAddress(f.address.ip) ? 'give the node port (1..65535, e.g. 30080)' : 'give a port between 0 and 65535');
    const [min, max] = nodePorts;
    // every node port, on the surrogate or on an address: it takes that port of the node
    if (f.type === 'NodePort' && (f.address.port < min || f.address.port > max)) {
      throw invalidFrontend(`${at}/address/port`, `node port ${f.address.port} is outside --node-port-range ${min}-${max}`, `give a node port from ${min} to ${max}, or widen --node-port-range (the port is taken on every address of the node, loopback included)`);
    }
    if (!PROTOS.includes(f.address.protocol)) throw invalidFrontend(`${at}/address/protocol`, `${String(f.address.protocol)} is not a protocol`, 'give tcp, udp or any');
    if (!(SERVICE_TYPES as readonly string[]).includes(f.type)) throw invalidFrontend(`${at}/type`, `${String(f.type)} is not a service type`, `give one of ${SERVICE_TYPES.join(', ')}`);
  }
  validateBackends(u.backends, u.frontends);
}

/** The fix for a frontend address that cannot be used (the unspecified one is NodePort's surrogate). */
function surrogateFix(ip: string): string {
  const cluster = 'give the service a cluster IP from the service CIDR (such as 10.96.0.10)';
  return isSurrogateAddress(ip) ? `${cluster}, or give it type NodePort to serve this port on every address of the node` : cluster;
}

/** Throws LBError when a backend cannot be used (pointers `/backends/<i>/...`). */
export function validateBackends(backends: ServiceUpsert['backends'], frontends: ServiceUpsert['frontends']): void {
  for (const [i, b] of backends.entries()) {
    const at = `/backends/${i}`;
    if (canonicalIP(b.address.ip) !== b.address.ip) throw invalidBackend(`${at}/address/ip`, `${JSON.stringify(b.address.ip)} is not a canonical IP address`, 'give an IPv4 or IPv6 address such as 10.0.1.5');
    const notBe = whyNotBackendAddress(b.address.ip);
    if (notBe) throw invalidBackend(`${at}/address/ip`, `${b.address.ip} cannot be a backend: ${notBe}`, 'give the address of a pod or host that serves the port');
    if (!validPort(b.address.port)) throw invalidBackend(`${at}/address/port`, `${String(b.address.port)} is not a port`, 'give a port between 1 and 65535');
    if (!(BACKEND_STATES as readonly string[]).includes(b.state)) throw invalidBackend(`${at}/state`, `${String(b.state)} is not a backend state`, `give one of ${BACKEND_STATES.join(', ')}`);
    if (!Number.isInteger(b.weight) || b.weight < 0 || b.weight > 65535) throw invalidBackend(`${at}/weight`, `${String(b.weight)} is not a weight`, 'give an integer between 0 and 65535');
    if (frontends.length && frontends.every((f) => isIPv6(f.address.ip) !== isIPv6(b.address.ip))) {
      throw invalidBackend(`${at}/address/ip`, `${b.address.ip} is not of the frontend's address family`, 'give IPv4 backends to an IPv4 frontend and IPv6 ones to an IPv6 frontend');
    }
  }
}
