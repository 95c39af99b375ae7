/**
 * toPorts of a rule entry -> protocol/port keys: ports checked, ANY with a port expanded to TCP, UDP
 * and SCTP. A port may be a name (Kubernetes IANA_SVC_NAME, e.g. `http`): on ingress it is resolved
 * per endpoint from its pod's container ports, on egress per peer identity from the node's
 * named-port map, when the map state is computed.
 */
import { Proto } from '../../datapath/types.js';
import { invalidField } from './errors.js';
import type { PortProto } from './rule.js';

/** The `toPorts` field as written. */
export type RawPortRules = readonly { readonly ports?: readonly { readonly port: string | number; readonly endPort?: number; readonly protocol?: string }[] }[];

const PROTO_NUMBER: Record<string, number> = { TCP: Proto.TCP, UDP: Proto.UDP, SCTP: Proto.SCTP, ICMP: Proto.ICMP, ANY: Proto.ANY };

/** Whether `text` is a port name (IANA_SVC_NAME): 1-15 of a-z, 0-9 and inner single '-', with a letter. */
export function isPortName(text: string): boolean {
  return /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/.test(text) && /[a-z]/.test(text) && !text.includes('--');
}

/** A named port entry (or entries, for ANY) of the entry at `at`; throws on what a name cannot be used with. */
function namedPort(name: string, protocol: number, endPort: number | undefined, at: string): PortProto[] {
  if (!isPortName(name)) throw invalidField(`${at}/port`, `${JSON.stringify(name)} is not a port number nor a port name`, 'give 0-65535, or a name of at most 15 lowercase letters, digits and inner single dashes, with a letter (e.g. http)');
  if (endPort !== undefined && endPort !== 0) throw invalidField(`${at}/endPort`, 'endPort with a named port', 'drop endPort, or give port numbers');
  if (protocol === Proto.ICMP) throw invalidField(`${at}/port`, 'ICMP has no ports', 'use port "0" with protocol ICMP');
  const protos = protocol === Proto.ANY ? [Proto.TCP, Proto.UDP, Proto.SCTP] : [protocol];
  return protos.map((p) => ({ protocol: p, port: 0, name }));
}

/** Parses the toPorts of the entry at `pointer`; empty means every protocol and port. */
export function parsePorts(raw: RawPortRules | undefined, pointer: string): PortProto[] {
  const out: PortProto[] = [];
  (raw ?? []).forEach((pr, i) => {
    if (!pr.ports || pr.ports.length === 0) {
      throw invalidField(`${pointer}/toPorts/${i}/ports`, 'a toPorts entry without ports', 'list ports ([{port: "80", protocol: TCP}]) or drop toPorts to allow every port');
    }
    pr.ports.forEach((pp, j) => {
      const at = `${pointer}/toPorts/${i}/ports/${j}`;
      const protoName = pp.protocol ?? 'ANY';
      const protocol = PROTO_NUMBER[protoName]!;
      if (typeof pp.port === 'string' && !/^[0-9]+$/.test(pp.port)) {
        out.push(...namedPort(pp.port, protocol, pp.endPort, at));
        return;
      }
      const port = Number(pp.port);
      if (!(port >= 0 && port <= 65535)) throw invalidField(`${at}/port`, `${JSON.stringify(pp.port)} is not a port number`, 'give 0-65535');
      const endPort = pp.endPort;
      if (endPort !== undefined && endPort !== 0 && endPort < port) {
        throw invalidField(`${at}/endPort`, `endPort ${endPort} is below port ${port}`, `set endPort >= ${port}, or drop it for a single port`);
      }
      if (endPort !== undefined && endPort > port && port === 0) {
        throw invalidField(`${at}/port`, 'a port range needs a start port above 0', 'set port to the first port of the range');
      }
      if (protocol === Proto.ICMP && port !== 0) {
        throw invalidField(`${at}/port`, 'ICMP has no ports', 'use port "0" with protocol ICMP');
      }
      const range = endPort !== undefined && endPort > port ? { endPort } : {};
      if (protocol === Proto.ANY && port !== 0) {
        for (const p of [Proto.TCP, Proto.UDP, Proto.SCTP]) out.push({ protocol: p, port, ...range });
      } else {
        out.push({ protocol, port: protocol === Proto.ANY ? 0 : port, ...(protocol === Proto.ANY ? {} : range) });
      }
    });
  });
  return out;
}
