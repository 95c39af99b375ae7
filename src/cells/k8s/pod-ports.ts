/**
 * A pod's named ports, as Cilium reads them for policy (the endpoint's k8sPorts): every container
 * port of `spec.containers` that has a name, with its protocol (default TCP). A NetworkPolicy port
 * given by name (`port: http`) allows, on each pod it selects, the number that pod declares.
 */
import type { NamedPort } from '../policy/types.js';
import type { Pod } from './types.js';

const PROTOCOLS: Readonly<Record<string, number>> = { TCP: 6, UDP: 17, SCTP: 132 };

/** The named container ports of a pod, sorted by name then protocol (ports the apiserver would refuse are left out). */
export function podNamedPorts(pod: Pod): NamedPort[] {
  const out: NamedPort[] = [];
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      const protocol = PROTOCOLS[p.protocol ?? 'TCP'];
      if (!p.name || protocol === undefined || !Number.isInteger(p.containerPort) || p.containerPort < 1 || p.containerPort > 65535) continue;
      out.push({ name: p.name, port: p.containerPort, protocol });
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name) || a.protocol - b.protocol || a.port - b.port);
}
