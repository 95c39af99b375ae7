/**
 * The node registry: this agent registers its node under `cilium/state/nodes/v1/<cluster>/<name>`
 * (leased with the session, put again when the lease is renewed) and mirrors every other node of
 * its cluster (list-then-watch); both followed by observer jobs added at start (`node-reregister`,
 * `node-records`). Without a kvstore it knows only itself.
 */
import type { Jobs } from '../../hive/jobs.js';
import type { Logger } from '../../hive/logger.js';
import { KEYS, PrefixMirror, type KVStore, type MirrorEvent } from '../kvstore/index.js';
import { nodeJson, parseNodeJson } from './node-json.js';
import { NodeTable } from './node-table.js';
import type { ClusterNode } from './types.js';

/** The registry; see the module comment. */
export class KVNodeRegistry extends NodeTable {
  private mirror?: PrefixMirror;

  constructor(
    private readonly kv: KVStore,
    self: Omit<ClusterNode, 'local' | 'ipv4AllocCidr'>,
    private readonly podCidr: () => string | undefined,
    private readonly jobs: Jobs,
    private readonly log: Logger,
  ) {
    super(self);
  }

  /** The key of a node. */
  keyOf(name: string): string {
    return `${KEYS.nodes}${this.kv.config.clusterName}/${name}`;
  }

  /** Registers this node and starts mirroring the others. */
  async start(): Promise<void> {
    const cidr = this.podCidr();
    this.setSelf({ ...this.me, ...(cidr ? { ipv4AllocCidr: cidr } : {}) });
    if (!this.kv.enabled) return;
    await this.register();
    const now = { immediate: true, sync: true } as const;
    this.jobs.observer('node-reregister', this.kv.sessionRenewed$, () => this.register().catch((err: Error) => this.log.warn({ err: err.message }, 'could not register the node again')), now);
    this.mirror = new PrefixMirror(this.kv, `${KEYS.nodes}${this.kv.config.clusterName}/`, this.log);
    this.jobs.observer('node-records', this.mirror.events$, (ev) => this.onMirror(ev), now);
    await this.mirror.start();
  }

  private async register(): Promise<void> {
    let lease = await this.kv.session();
    await lease.put(this.keyOf(this.me.name)).value(nodeJson(this.me));
    // written under a lease replaced meanwhile (it goes with the old one): once more under the current one
    if (!this.kv.isCurrent(lease)) {
      lease = await this.kv.session();
      await lease.put(this.keyOf(this.me.name)).value(nodeJson(this.me));
    }
    this.log.info({ node: this.me.name, ip: this.me.ipv4, podCIDR: this.me.ipv4AllocCidr }, 'node registered in the kvstore');
  }

  private onMirror(ev: MirrorEvent): void {
    if (ev.key === this.me.name) return;
    if (ev.kind === 'delete') {
      const gone = this.drop(ev.key);
      if (gone) this.log.info({ node: gone.name }, 'node left the cluster');
      return;
    }
    const n = parseNodeJson(ev.value, this.me.name);
    if (!n || n.name !== ev.key) {
      this.log.warn({ key: ev.key }, 'ignoring a node record that is not Cilium\'s node JSON');
      return;
    }
    this.put(n);
  }

  /** Stops watching; this node's key goes with the session lease. */
  async stop(): Promise<void> {
    await this.mirror?.stop();
    this.complete();
  }
}
