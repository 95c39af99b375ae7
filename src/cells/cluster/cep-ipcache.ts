/**
 * The ipcache across nodes in Kubernetes mode without --kvstore: other nodes' endpoints from their
 * CiliumEndpoints (`status.networking.addressing`, `status.networking.node` = the node's address,
 * `status.identity.id`, as Cilium's CEP watcher feeds its ipcache), and other nodes' own addresses
 * as `remote-node` (6). An endpoint's entry is in the datapath only while its node is a known node
 * (a CiliumNode): a node deleted takes its endpoints' entries with it, even when their
 * CiliumEndpoints stay behind. This node's CiliumEndpoints are skipped (its endpoints are written
 * first hand); an address of a local endpoint always wins; an address claimed by two
 * CiliumEndpoints goes to the one changed last, and back to the other when that one goes. A
 * CiliumEndpoint that is not readable contributes nothing (reported naming the field).
 */
import { isIP } from 'node:net';
import type { Logger } from '../../hive/logger.js';
import { hostCidr } from '../../lib/addr.js';
import type { Datapath } from '../../datapath/types.js';
import { ReservedIdentity } from '../../datapath/types.js';
import type { EndpointManager } from '../endpoint/index.js';
import { keyOf, type CiliumEndpointObject, type ResourceEvent } from '../k8s/index.js';
import { localEntries, sortedEntries } from './local-entries.js';
import type { ClusterIPCache, IPCacheListEntry, NodeEvent, NodeRegistry } from './types.js';

/** One address of a remote endpoint. */
interface RemoteEntry {
  readonly ip: string;
  readonly identity: number;
  readonly hostIP: string;
  readonly namespace?: string;
  readonly name?: string;
}

/** What a CiliumEndpoint says: its entries, nothing (this node's), or why it is unreadable. */
export function cepEntries(cep: CiliumEndpointObject, localNode: string): { entries: RemoteEntry[]; problem?: string } {
  const where = `CiliumEndpoint ${keyOf(cep)}`;
  const status = cep.status ?? {};
  const net = status.networking as { node?: unknown; addressing?: unknown } | undefined;
  if (net?.node === localNode) return { entries: [] };
  if (typeof net?.node !== 'string' || !isIP(net.node)) return { entries: [], problem: `${where}: /status/networking/node ${JSON.stringify(net?.node)} is not an IP address; fix: that node's agent writes it` };
  const id = (status.identity as { id?: unknown } | undefined)?.id;
  if (id === undefined) return { entries: [] };
  if (typeof id !== 'number' || !Number.isInteger(id) || id <= 0) return { entries: [], problem: `${where}: /status/identity/id ${JSON.stringify(id)} is not a positive integer; fix: that node's agent writes it` };
  if (!Array.isArray(net.addressing)) return { entries: [], problem: `${where}: /status/networking/addressing is not a list; fix: that node's agent writes it` };
  const entries: RemoteEntry[] = [];
  for (const a of net.addressing as { ipv4?: unknown; ipv6?: unknown }[]) {
    for (const ip of [a?.ipv4, a?.ipv6]) {
      if (typeof ip === 'string' && isIP(ip)) entries.push({ ip, identity: id, hostIP: net.node, ...(cep.metadata?.namespace ? { namespace: cep.metadata.namespace } : {}), ...(cep.metadata?.name ? { name: cep.metadata.name } : {}) });
    }
  }
  return { entries };
}

/** Mirrors other nodes' CiliumEndpoints and nodes into the datapath; see the module comment. */
export class CepIPCache implements ClusterIPCache {
  /** Entries by CiliumEndpoint key (re-inserted on change: the last changed is last). */
  private readonly byCep = new Map<string, RemoteEntry[]>();
  /** Other nodes' own addresses -> node name. */
  private readonly remoteNodes = new Map<string, string>();
  /** What is in the datapath for remote addresses: ip -> identity. */
  private readonly installed = new Map<string, number>();
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly nodes: NodeRegistry,
    private readonly endpoints: EndpointManager,
    private readonly dp: Datapath,
    private readonly log: Logger,
  ) {}

  /** A CiliumEndpoint changed (the cluster cell's observer job `ipcache-ciliumendpoints`). */
  onCep(ev: ResourceEvent<CiliumEndpointObject>): void {
    if (ev.kind === 'sync') return;
    const before = this.byCep.get(ev.key) ?? [];
    this.byCep.delete(ev.key);
    if (ev.kind === 'upsert') {
      const { entries, problem } = cepEntries(ev.object, this.nodes.self().ipv4);
      if (problem && this.reported.get(ev.key) !== problem) this.log.warn({ cep: ev.key }, problem);
      if (problem) this.reported.set(ev.key, problem);
      else this.reported.delete(ev.key);
      if (entries.length > 0) this.byCep.set(ev.key, entries);
    } else {
      this.reported.delete(ev.key);
    }
    const ips = new Set([...before, ...(this.byCep.get(ev.key) ?? [])].map((e) => e.ip));
    for (const ip of ips) this.refresh(ip);
  }

  /** A node came, changed or went (the observer job `ipcache-nodes`): its address and its endpoints follow. */
  onNode(ev: NodeEvent): void {
    if (ev.node.local) return;
    const touched = new Set<string>();
    for (const [addr, name] of this.remoteNodes) {
      if (name === ev.node.name && (ev.kind === 'delete' || addr !== ev.node.ipv4)) {
        this.remoteNodes.delete(addr);
        touched.add(addr);
      }
    }
    if (ev.kind === 'upsert') {
      this.remoteNodes.set(ev.node.ipv4, ev.node.name);
      touched.add(ev.node.ipv4);
    }
    for (const entries of this.byCep.values()) for (const e of entries) if (touched.has(e.hostIP)) touched.add(e.ip);
    for (const ip of touched) this.refresh(ip);
  }

  /** The entry an address should have now: a local endpoint's (none here), an endpoint of a known node, the node itself. */
  private want(ip: string): number | undefined {
    if (this.endpoints.lookup(`${ip.includes(':') ? 'ipv6' : 'ipv4'}:${ip}`) !== undefined) return undefined;
    let id: number | undefined;
    for (const entries of this.byCep.values()) for (const e of entries) if (e.ip === ip && this.remoteNodes.has(e.hostIP)) id = e.identity;
    if (id === undefined && this.remoteNodes.has(ip)) id = ReservedIdentity.remoteNode;
    return id;
  }

  private refresh(ip: string): void {
    const id = this.want(ip);
    const have = this.installed.get(ip);
    if (id === have) return;
    if (id === undefined) {
      this.installed.delete(ip);
      if (this.endpoints.lookup(`${ip.includes(':') ? 'ipv6' : 'ipv4'}:${ip}`) === undefined) this.dp.maps.deleteIPCache(hostCidr(ip));
      return;
    }
    this.installed.set(ip, id);
    this.dp.maps.upsertIPCache({ cidr: hostCidr(ip), identity: id });
  }

  /** See ClusterIPCache. */
  list(): IPCacheListEntry[] {
    const entries: IPCacheListEntry[] = [];
    for (const [ip, name] of this.remoteNodes) if (this.installed.get(ip) === ReservedIdentity.remoteNode) entries.push({ cidr: hostCidr(ip), identity: ReservedIdentity.remoteNode, hostIP: ip, source: 'custom-resource', name });
    for (const list of this.byCep.values()) {
      for (const e of list) {
        if (this.installed.get(e.ip) !== e.identity || !this.remoteNodes.has(e.hostIP)) continue;
        entries.push({ cidr: hostCidr(e.ip), identity: e.identity, hostIP: e.hostIP, source: 'custom-resource', ...(e.namespace ? { namespace: e.namespace } : {}), ...(e.name ? { name: e.name } : {}) });
      }
    }
    return sortedEntries([...entries, ...localEntries(this.endpoints, this.nodes.self().ipv4)]);
  }
}
