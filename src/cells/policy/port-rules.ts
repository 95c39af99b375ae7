/** toPorts of a rule entry -> protocol/port keys: ports checked, ANY with a port expanded to TCP, UDP and SCTP. */
import { Proto } from '../../datapath/types.js';
import { invalidField } from './errors.js';
import type { PortProto } from './rule.js';

/** The `toPorts` field as written. */
export type RawPortRules = readonly { readonly ports?: readonly { readonly port: string | number; readonly endPort?: number; readonly protocol?: string }[] }[];

const PROTO_NUMBER: Record<string, number> = { TCP: Proto.TCP, UDP: Proto.UDP, SCTP: Proto.SCTP, ICMP: Proto.ICMP, ANY: Proto.ANY };

/** Parses the toPorts of the entry at `pointer`; empty means every protocol and port. */
export function parsePorts(raw: RawPortRules | undefined, pointer: string): PortProto[] {
  const out: PortProto[] = [];
  (raw ?? []).forEach((pr, i) => {
    if (!pr.ports || pr.ports.length === 0) {
      throw invalidField(`${pointer}/toPorts/${i}/ports`, 'a toPorts entry without ports', 'list ports ([{port: "80", protocol: TCP}]) or drop toPorts to allow every port');
    }
    pr.ports.forEach((pp, j) => {
      const at = `${pointer}/toPorts/${i}/ports/${j}`;
      const port = Number(pp.port);
      if (!(port >= 0 && port <= 65535)) throw invalidField(`${at}/port`, `${JSON.stringify(pp.port)} is not a port number`, 'give 0-65535');
      const protoName = pp.protocol ?? 'ANY';
      const protocol = PROTO_NUMBER[protoName]!;
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
