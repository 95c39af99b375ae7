/**
 * What a frontend or backend may not take of the node, which changes as the node's addresses come
 * and go (see node-addrs.ts): a ClusterIP, ExternalIPs, LoadBalancer or LocalRedirect frontend is
 * never one of the node's own addresses (NodePort lives on them by definition, within
 * --node-port-range); HostPort is never accepted (a pod's spec is its only source, and Cellium
 * derives none); no backend is the agent's own API. The manager refuses new input that collides
 * (checkCollisions: 460 / 461) and disables a frontend that collides later (whyDisabled: an address
 * added to an interface, a restored service).
 */
import { agentBackend, hostPortRefused, nodeAddressFrontend } from './errors.js';
import type { NodeAddressCheck } from './node-addrs.js';
import type { Backend, FrontendDesired, ServiceType, ServiceUpsert } from './types.js';

/** Why a frontend of `type` on the canonical `ip` collides with the node (undefined: it does not). */
export function frontendCollision(addrs: NodeAddressCheck | undefined, ip: string, type: ServiceType): string | undefined {
  if (type === 'HostPort') return 'type HostPort is derived from pods only';
  if (type === 'NodePort') return undefined;
  return addrs?.frontend(ip);
}

/** Why backend `b` is the agent itself (undefined: it is not). */
export function backendCollision(addrs: NodeAddressCheck | undefined, b: Backend): string | undefined {
  return addrs?.backend(b.address.ip, b.address.port);
}

/** Throws the LBError (460 / 461) of the first frontend or backend of `u` that collides with the node. */
export function checkCollisions(addrs: NodeAddressCheck | undefined, u: Pick<ServiceUpsert, 'frontends' | 'backends'>): void {
  for (const [i, f] of u.frontends.entries()) {
    const at = `/frontends/${i}`;
    if (f.type === 'HostPort') throw hostPortRefused(`${at}/type`);
    const why = frontendCollision(addrs, f.address.ip, f.type);
    if (why) throw nodeAddressFrontend(`${at}/address/ip`, f.address.ip, f.type, why);
  }
  checkBackendCollisions(addrs, u.backends);
}

/** Throws the LBError (461) of the first backend that is the agent itself. */
export function checkBackendCollisions(addrs: NodeAddressCheck | undefined, backends: readonly Backend[]): void {
  for (const [i, b] of backends.entries()) {
    const why = backendCollision(addrs, b);
    if (why) throw agentBackend(`/backends/${i}/address`, b.address.ip, b.address.port, why);
  }
}

/** Why frontend `d` must stay out of the LB maps now (its address, or one of its backends, collides); undefined: it may be written. */
export function whyDisabled(addrs: NodeAddressCheck | undefined, d: FrontendDesired): string | undefined {
  const fe = frontendCollision(addrs, d.address.ip, d.type);
  if (fe) return `frontend ${d.address.ip}: ${fe}`;
  for (const b of d.backends) {
    const why = backendCollision(addrs, b);
    if (why) return `backend ${b.address.ip}:${b.address.port}: ${why}`;
  }
  return undefined;
}
