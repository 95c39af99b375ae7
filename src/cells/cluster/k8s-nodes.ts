/**
 * The node registry in Kubernetes mode without --kvstore (Cilium's CRD mode): this node's
 * CiliumNode is written by its agent at start (`ensureOwnCiliumNode`) and every CiliumNode is
 * watched (the observer job `ciliumnode-records`): another node appearing or changing is an
 * upsert, its CiliumNode deleted (or no longer carrying an IPv4 InternalIP) a delete, so routes and
 * ipcache entries of a node that is gone go with it. Where this node has a Kubernetes Node, its
 * CiliumNode is owned by it, so `kubectl delete node` removes the CiliumNode (Kubernetes' garbage
 * collector) and every other node forgets this one. This node's CiliumNode deleted while the agent
 * runs is written again, unless it was owned by a Node that is gone now (the node was removed).
 * This node's Node is watched too (`own-node`): a Node registered after the agent started, or
 * registered again with a new uid, becomes the CiliumNode's owner.
 */
import type { Jobs } from '../../hive/jobs.js';
import type { Logger } from '../../hive/logger.js';
import { sleep } from '../../hive/timeout.js';
import type { K8sObject, Resource, ResourceEvent } from '../k8s/index.js';
import { nodeOf, type CiliumNode, type CiliumNodeApi } from './ciliumnode.js';
import { NodeTable } from './node-table.js';
import { nodeRemoved } from './errors.js';
import { ensureOwnCiliumNode } from './own-ciliumnode.js';
import type { ClusterNode } from './types.js';

/** A Kubernetes Node as the registry reads it (its name and uid). */
export type K8sNode = K8sObject & { readonly metadata: { readonly uid?: string } };

/** The registry; see the module comment. */
export class CiliumNodeRegistry extends NodeTable {
  /** Problems already reported, by node (reported again only when they change). */
  private readonly reported = new Map<string, string>();
  private stopped = false;
  private writing?: Promise<void>;
  private readonly abort = new AbortController();
  /** The uid of this node's Node when its CiliumNode was last written (undefined: there was none). */
  private ownerUid?: string;
  /** Something changed while a write was under way: write once more after it. */
  private writeAgain = false;

  constructor(
    private readonly api: CiliumNodeApi,
    private readonly resource: Resource<CiliumNode>,
    /** This node's Kubernetes Node (a watch of one name). */
    private readonly ownNode: Resource<K8sNode>,
    self: Omit<ClusterNode, 'local' | 'ipv4AllocCidr'>,
    /** This node's pod CIDR and whether the agent writes it (a fixed --ipv4-range) or the allocator did. */
    private readonly podCidr: () => { cidr?: string; fixed: boolean },
    private readonly jobs: Jobs,
    private readonly log: Logger,
  ) {
    super(self);
  }

  /** Writes this node's CiliumNode (in the background) and follows every CiliumNode from now on. */
  start(): void {
    const { cidr } = this.podCidr();
    this.setSelf({ ...this.me, ...(cidr ? { ipv4AllocCidr: cidr } : {}) });
    this.writeSelfUntilDone();
    this.jobs.observer('ciliumnode-records', this.resource.events(), (ev) => this.onEvent(ev), { immediate: true, sync: true });
    this.jobs.observer('own-node', this.ownNode.events(), (ev) => this.onOwnNode(ev), { immediate: true, sync: true });
  }

  /** This node's Node appeared or came back with a new uid: it owns the CiliumNode from now on. */
  private onOwnNode(ev: ResourceEvent<K8sNode>): void {
    if (ev.kind !== 'upsert' || ev.object.metadata.name !== this.me.name || this.stopped) return;
    const uid = ev.object.metadata.uid;
    if (typeof uid === 'string' && uid !== this.ownerUid) this.writeSelfUntilDone();
  }

  /**
   * Writes this node's CiliumNode in the background, tried again with backoff (500 ms doubling to
   * 30 s) while the apiserver does not take it (the CRD still registering, the apiserver down):
   * until then other nodes do not know this one, and nothing here waits for it.
   */
  private writeSelfUntilDone(): void {
    if (this.writing) {
      this.writeAgain = true;
      return;
    }
    this.writing = (async () => {
      let last = '';
      for (let failures = 0; !this.stopped; failures++) {
        try {
          const { cidr, fixed } = this.podCidr();
          const nodeUid = await this.api.nodeUid(this.me.name, this.abort.signal);
          if (this.ownerUid !== undefined && nodeUid === undefined) {
            this.log.error({ node: this.me.name }, nodeRemoved(this.me.name));
            return;
          }
          await ensureOwnCiliumNode(this.api, { name: this.me.name, ipv4: this.me.ipv4, ...(fixed && cidr ? { fixedPodCIDR: cidr } : {}), ...(nodeUid ? { nodeUid } : {}) }, this.log, this.abort.signal);
          this.ownerUid = nodeUid;
          return;
        } catch (err) {
          if (this.stopped) return;
          if ((err as Error).message !== last) this.log.warn({ err: (err as Error).message }, 'could not write the CiliumNode of this node; trying again');
          last = (err as Error).message;
          await sleep(Math.min(30_000, 500 * 2 ** Math.min(failures, 10)), this.abort.signal).catch(() => undefined);
        }
      }
    })().finally(() => {
      this.writing = undefined;
      if (this.writeAgain && !this.stopped) {
        this.writeAgain = false;
        this.writeSelfUntilDone();
      }
    });
  }

  private onEvent(ev: ResourceEvent<CiliumNode>): void {
    if (ev.kind === 'sync') return;
    const name = ev.object.metadata.name;
    if (name === this.me.name) {
      if (ev.kind === 'delete' && !this.stopped) {
        this.log.warn({ node: name }, 'the CiliumNode of this node was deleted; writing it again');
        this.writeSelfUntilDone();
      }
      return;
    }
    const parsed = ev.kind === 'upsert' ? nodeOf(ev.object, this.me.name, this.me.cluster) : {};
    if (parsed.problem && this.reported.get(name) !== parsed.problem) {
      this.reported.set(name, parsed.problem);
      this.log.warn({ node: name }, parsed.problem);
    }
    const n = parsed.node;
    if (!n) {
      if (this.drop(name)) this.log.info({ node: name }, 'node left the cluster (its CiliumNode is gone)');
      return;
    }
    this.reported.delete(name);
    const have = this.known(name);
    if (have && have.ipv4 === n.ipv4 && have.ipv4AllocCidr === n.ipv4AllocCidr) return;
    this.put(n);
    if (!have) this.log.info({ node: name, ip: n.ipv4, podCIDR: n.ipv4AllocCidr }, 'node joined the cluster (CiliumNode)');
  }

  /** Stops following and writing (the CiliumNode stays: it is the node's, removed with the node). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.writing;
    this.complete();
  }
}
