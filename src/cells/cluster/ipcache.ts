/**
 * The ipcache across nodes. Publishing: every local endpoint with an address and an identity is
 * put under `cilium/state/ip/v1/default/<ip>` with this agent's session lease (so it goes when the
 * agent dies), updated when its identity changes and deleted with the endpoint. Watching: every
 * other node's records go into the datapath's ipcache (BPF map or memory model) as `<ip>/32 ->
 * identity`, and every other node's own address as `remote-node` (6), so policy by identity works
 * for peers on other nodes; they are removed when deleted in etcd or when their lease expires.
 * What it follows (nodes, records, endpoints, lease renewals) are observer jobs added at start.
 */
import { merge } from 'rxjs';
import type { Jobs } from '../../hive/jobs.js';
import type { Logger } from '../../hive/logger.js';
import { hostCidr } from '../../lib/addr.js';
import type { Datapath } from '../../datapath/types.js';
import { ReservedIdentity } from '../../datapath/types.js';
import type { EndpointManager, EndpointView } from '../endpoint/index.js';
import { KEYS, PrefixMirror, type KVStore, type MirrorEvent } from '../kvstore/index.js';
import { ipJson, parseIPJson, type IPRecord } from './ip-json.js';
import { localEntries, podOf, sortedEntries } from './local-entries.js';
import type { ClusterIPCache, IPCacheListEntry, NodeEvent, NodeRegistry } from './types.js';

/** How soon an endpoint still waiting for its identity is looked at again. */
const PENDING_RETRY_MS = 20;

/** Publishes local endpoints and mirrors remote ones into the datapath; see the module comment. */
export class KVIPCache implements ClusterIPCache {
  /** What this agent published: ip -> JSON. */
  private readonly published = new Map<string, string>();
  /** Other nodes' endpoint records by IP. */
  private readonly remote = new Map<string, IPRecord>();
  /** Other nodes' own addresses -> node name. */
  private readonly remoteNodes = new Map<string, string>();
  private mirror?: PrefixMirror;
  private syncing?: Promise<void>;
  private again = false;
  private retry?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly kv: KVStore,
    private readonly nodes: NodeRegistry,
    private readonly endpoints: EndpointManager,
    private readonly dp: Datapath,
    private readonly jobs: Jobs,
    private readonly log: Logger,
  ) {}

  /** Publishes what exists, mirrors the others, and follows endpoints and nodes from now on. */
  async start(): Promise<void> {
    if (!this.kv.enabled) return;
    // each followed from here on, inside its source's `next`, as the subscriptions made here before
    const now = { immediate: true, sync: true } as const;
    for (const n of this.nodes.list()) if (!n.local) this.onNode({ kind: 'upsert', node: n });
    this.jobs.observer('ipcache-nodes', this.nodes.events$, (ev) => this.onNode(ev), now);
    this.mirror = new PrefixMirror(this.kv, KEYS.ip, this.log);
    this.jobs.observer('ipcache-records', this.mirror.events$, (ev) => this.onRecord(ev), now);
    await this.mirror.start();
    const { created$, deleted$, restored$ } = this.endpoints;
    this.jobs.observer('ipcache-endpoints', merge(created$, deleted$, restored$), () => this.trigger(), now);
    // a lost lease took every key with it: put them all again
    this.jobs.observer('ipcache-republish', this.kv.sessionRenewed$, () => {
      this.published.clear();
      this.trigger();
    }, now);
    await this.sync();
  }

  /** Schedules a publish (coalesced with one in progress). */
  trigger(): void {
    if (this.stopped || !this.kv.enabled) return;
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = this.syncLoop().finally(() => (this.syncing = undefined));
  }

  /** Publishes now and waits for it (the periodic job and tests). */
  async sync(): Promise<void> {
    this.trigger();
    while (this.syncing) await this.syncing;
  }

  private async syncLoop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.publish();
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'kvstore: publishing the ipcache failed; retrying on the next sync');
        return;
      }
    } while (this.again && !this.stopped);
  }

  private desired(): { want: Map<string, string>; pending: boolean } {
    const self = this.nodes.self();
    const want = new Map<string, string>();
    let pending = false;
    for (const ep of this.endpoints.getEndpoints()) {
      if (ep.state === 'disconnecting' || ep.state === 'disconnected') continue;
      if (ep.identity === undefined) {
        pending ||= !!(ep.ipv4 || ep.ipv6);
        continue;
      }
      for (const ip of [ep.ipv4, ep.ipv6]) {
        if (ip) want.set(ip, ipJson(record(ep, ip, self.ipv4, self.name, self.cluster)));
      }
    }
    return { want, pending };
  }

  private async publish(): Promise<void> {
    const { want, pending } = this.desired();
    if (pending && !this.retry) this.retry = setTimeout(() => {
      this.retry = undefined;
      this.trigger();
    }, PENDING_RETRY_MS);
    const lease = await this.kv.session();
    for (const [ip, json] of want) {
      if (this.published.get(ip) === json) continue;
      await lease.put(`${KEYS.ip}${ip}`).value(json);
      // written under a lease replaced meanwhile: it goes with the old lease, so it is put again
      if (!this.kv.isCurrent(lease)) {
        this.again = true;
        return;
      }
      this.published.set(ip, json);
    }
    for (const ip of [...this.published.keys()]) {
      if (want.has(ip)) continue;
      await this.kv.etcd.delete().key(`${KEYS.ip}${ip}`);
      this.published.delete(ip);
    }
  }

  private isLocal(ip: string): boolean {
    return this.endpoints.lookup(`${ip.includes(':') ? 'ipv6' : 'ipv4'}:${ip}`) !== undefined;
  }

  private onRecord(ev: MirrorEvent): void {
    const ip = ev.key;
    const self = this.nodes.self();
    if (ev.kind === 'delete') {
      if (!this.remote.delete(ip)) return;
      if (!this.isLocal(ip)) this.dp.maps.deleteIPCache(hostCidr(ip));
      this.restoreNodeEntry(ip);
      return;
    }
    const r = parseIPJson(ev.value);
    if (!r || r.ip !== ip) {
      this.log.warn({ key: ev.key }, 'ignoring an ipcache record that is not Cilium\'s IPIdentityPair JSON');
      return;
    }
    if (r.node === self.name && r.cluster === self.cluster) return; // our own
    this.remote.set(ip, r);
    // a local endpoint with the address wins (a stale record of a node that had it before)
    if (!this.isLocal(ip)) this.dp.maps.upsertIPCache({ cidr: hostCidr(ip), identity: r.identity });
  }

  private onNode(ev: NodeEvent): void {
    const ip = ev.node.ipv4;
    if (ev.kind === 'upsert') {
      for (const [addr, name] of this.remoteNodes) {
        if (name === ev.node.name && addr !== ip) this.dropNodeEntry(addr);
      }
      this.remoteNodes.set(ip, ev.node.name);
      if (!this.remote.has(ip) && !this.isLocal(ip)) this.dp.maps.upsertIPCache({ cidr: hostCidr(ip), identity: ReservedIdentity.remoteNode });
    } else if (this.remoteNodes.get(ip) === ev.node.name) {
      this.dropNodeEntry(ip);
    }
  }

  private dropNodeEntry(ip: string): void {
    this.remoteNodes.delete(ip);
    if (!this.remote.has(ip) && !this.isLocal(ip)) this.dp.maps.deleteIPCache(hostCidr(ip));
  }

  private restoreNodeEntry(ip: string): void {
    if (this.remoteNodes.has(ip) && !this.isLocal(ip)) this.dp.maps.upsertIPCache({ cidr: hostCidr(ip), identity: ReservedIdentity.remoteNode });
  }

  /** See ClusterIPCache. */
  list(): IPCacheListEntry[] {
    const entries: IPCacheListEntry[] = [];
    for (const [ip, name] of this.remoteNodes) entries.push({ cidr: hostCidr(ip), identity: ReservedIdentity.remoteNode, hostIP: ip, source: 'kvstore', name });
    for (const r of this.remote.values()) {
      entries.push({ cidr: hostCidr(r.ip), identity: r.identity, hostIP: r.hostIP, source: 'kvstore', ...(r.namespace ? { namespace: r.namespace } : {}), ...(r.podName ? { name: r.podName } : {}) });
    }
    return sortedEntries([...entries, ...localEntries(this.endpoints, this.nodes.self().ipv4)]);
  }

  /** Stops following; the published keys go with the session lease. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    await this.syncing;
    await this.mirror?.stop();
  }
}

function record(ep: EndpointView, ip: string, hostIP: string, node: string, cluster: string): IPRecord {
  return {
    ip, hostIP, identity: ep.identity!, node, cluster, endpointId: ep.id,
    ...(ep.namespace ? { namespace: ep.namespace } : {}), ...(podOf(ep) ? { podName: podOf(ep) } : {}),
  };
}
