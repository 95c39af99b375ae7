/**
 * Which service answers on an address: the loadbalancer's frontends (`10.96.0.10:80/TCP`, external
 * scope first, then internal), for the source_service and destination_service of flows.
 */
import { formatL3n4, type L4Proto, type ServiceManager } from '../loadbalancer/index.js';
import type { ServiceLookup } from './observer.js';

const PROTOS: Readonly<Record<number, L4Proto>> = { 6: 'tcp', 17: 'udp' };

/** A lookup of services by frontend address in `mgr`. */
export function frontendServices(mgr: ServiceManager): ServiceLookup {
  return (ip, port, protocol) => {
    const proto = PROTOS[protocol];
    if (!proto || port === 0 || mgr.frontends.size === 0) return undefined;
    for (const scope of ['external', 'internal'] as const) {
      const fe = mgr.frontends.get(formatL3n4({ ip, port, protocol: proto, scope }));
      if (!fe) continue;
      const svc = mgr.service(fe.value.serviceKey);
      if (svc) return { name: svc.name, namespace: svc.namespace };
    }
    return undefined;
  };
}
