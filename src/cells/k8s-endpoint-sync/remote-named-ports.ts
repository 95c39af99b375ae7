/**
 * The named ports of other nodes' endpoints, from their CiliumEndpoints (`status.identity.id`,
 * `status.named-ports`, as Cilium's CEP watcher puts them into its ipcache's named-port map): a
 * named egress port resolves against the destination pods wherever they run. CiliumEndpoints of
 * this node (`status.networking.node` is this node's address) are skipped: the endpoint cell has
 * those endpoints first hand. A CiliumEndpoint without an identity contributes nothing; an entry
 * of `named-ports` that is not a valid named port is left out (allows less) and reported naming
 * the field and the fix. Its addresses (`status.networking.addressing`) go into the map too: a
 * Kubernetes ipBlock selects an identity only when every address of its pods, on any node, is
 * inside the block.
 */
import { isIP } from 'node:net';
import { isPortName, type NamedPort } from '../policy/index.js';
import type { CiliumEndpointObject } from '../k8s/index.js';

/** What one CiliumEndpoint contributes to the named-port map. */
export interface CepPorts {
  /** The owner key in the map: `cep:<namespace>/<name>`. */
  readonly owner: string;
  /** Undefined: nothing (this node's, or no identity yet). */
  readonly contribution?: { readonly identity: number; readonly ports: readonly NamedPort[]; readonly addresses: readonly string[] };
  /** Entries left out, each naming the field and the fix. */
  readonly problems: readonly string[];
}

const PROTOCOLS: Readonly<Record<string, number>> = { TCP: 6, UDP: 17, SCTP: 132 };

/** The owner key of a CiliumEndpoint in the named-port map. */
export function cepOwner(namespace: string | undefined, name: string | undefined): string {
  return `cep:${namespace ?? ''}/${name ?? ''}`;
}

/** What `cep` contributes, `localNode` being this node's address (see the module comment). */
export function cepNamedPorts(cep: CiliumEndpointObject, localNode: string): CepPorts {
  const owner = cepOwner(cep.metadata?.namespace, cep.metadata?.name);
  const status = cep.status ?? {};
  const networking = status.networking as { node?: unknown } | undefined;
  if (networking?.node === localNode) return { owner, problems: [] };
  const id = (status.identity as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'number' || !Number.isInteger(id) || id <= 0) return { owner, problems: [] };
  const raw = status['named-ports'];
  const problems: string[] = [];
  const ports: NamedPort[] = [];
  if (raw !== undefined && !Array.isArray(raw)) problems.push(`/status/named-ports: expected an array of {name, port, protocol}, got ${JSON.stringify(raw)}; fix: the agent of node ${String(networking?.node)} writes it, upgrade or fix that agent`);
  (Array.isArray(raw) ? raw : []).forEach((e: unknown, i) => {
    const at = `/status/named-ports/${i}`;
    const { name, port, protocol } = (e ?? {}) as { name?: unknown; port?: unknown; protocol?: unknown };
    const proto = PROTOCOLS[typeof protocol === 'string' ? protocol.toUpperCase() : protocol === undefined ? 'TCP' : ''];
    if (typeof name !== 'string' || !isPortName(name)) problems.push(`${at}/name: ${JSON.stringify(name)} is not a port name; fix: at most 15 lowercase letters, digits and inner dashes, with a letter`);
    else if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) problems.push(`${at}/port: ${JSON.stringify(port)} is not a port number; fix: give 1-65535`);
    else if (proto === undefined) problems.push(`${at}/protocol: ${JSON.stringify(protocol)} is not TCP, UDP or SCTP; fix: give one of them`);
    else ports.push({ name, port, protocol: proto });
  });
  const addressing = (networking as { addressing?: unknown } | undefined)?.addressing;
  const addresses = (Array.isArray(addressing) ? (addressing as { ipv4?: unknown; ipv6?: unknown }[]) : []).flatMap((a) => [a?.ipv4, a?.ipv6]).filter((ip): ip is string => typeof ip === 'string' && isIP(ip) !== 0);
  return { owner, contribution: { identity: id, ports, addresses }, problems };
}
