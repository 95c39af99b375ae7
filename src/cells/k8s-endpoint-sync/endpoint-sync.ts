/**
 * The CiliumEndpoint of one pod endpoint (Cilium's RunK8sCiliumEndpointSync controller body): the
 * first sync creates it (owner-referenced to the Pod, whose uid comes from the agent's Pods cache)
 * or adopts the one there when it is owned by the same Pod (a restarted agent's restored
 * endpoint); a CiliumEndpoint of the same name left by an earlier pod of that name on this node is
 * replaced; one of another node is never touched. Later syncs write only when the status or the
 * pod's labels changed, with a JSON patch that tests the uid. `remove` deletes it with a uid
 * precondition. Calls are serialized: a removal runs after a sync in flight.
 */
import type { Logger } from '../../hive/index.js';
import { sleep } from '../../hive/index.js';
import type { EndpointView } from '../endpoint/index.js';
import type { Pod, Resource } from '../k8s/index.js';
import type { CepApi } from './api.js';
import { cepStatus, newCep, ownerPodUid, podOwner, type CepStatus, type CiliumEndpoint } from './cep.js';
import { cepNotWritten, cepTaken, podUnknown } from './errors.js';

/** What one endpoint's sync uses. */
export interface CepSyncDeps {
  readonly api: CepApi;
  readonly pods: Resource<Pod>;
  /** This node's address (status.networking.node: how the CiliumEndpoints of this node are known). */
  readonly nodeIP: string;
  readonly nodeName: string;
  readonly log: Logger;
}

/** The sync of one endpoint's CiliumEndpoint `namespace/name`. */
export class CepSync {
  /** The CiliumEndpoint's uid, once created or adopted. */
  private uid?: string;
  /** The Pod uid it is owned by. */
  private ownerUid?: string;
  /** What was last written (status and labels), to write only changes. */
  private last?: string;
  private labels: Readonly<Record<string, string>> = {};
  private chain: Promise<unknown> = Promise.resolve();
  private removed = false;

  constructor(
    private readonly ep: EndpointView,
    readonly namespace: string,
    readonly name: string,
    private readonly d: CepSyncDeps,
  ) {}

  /** `namespace/name`. */
  get key(): string {
    return `${this.namespace}/${this.name}`;
  }

  /** Whether the CiliumEndpoint exists with this endpoint's status (written by this agent or adopted). */
  get written(): boolean {
    return this.uid !== undefined && this.last !== undefined;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** One sync (the controller's run): creates or adopts it, then writes what changed. */
  sync(signal?: AbortSignal): Promise<void> {
    return this.serial(() => this.syncOnce(signal));
  }

  /**
   * Syncs until the CiliumEndpoint is written (the CNI ADD waits for this), retrying failures
   * with a short backoff, at most `timeoutMs`; then throws naming the last failure.
   */
  async ensure(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
      let last: string;
      try {
        await this.sync(signal);
        if (this.written) return;
        last = 'the endpoint has no security identity yet';
      } catch (err) {
        if (signal?.aborted) throw err;
        last = (err as Error).message;
      }
      if (Date.now() + wait > deadline) throw cepNotWritten(this.key, timeoutMs, last);
      await sleep(wait, signal);
    }
  }

  private async syncOnce(signal?: AbortSignal): Promise<void> {
    if (this.removed || this.ep.state === 'disconnecting' || this.ep.state === 'disconnected') return;
    // Cilium writes no CiliumEndpoint before the endpoint has its identity
    if (this.ep.identity === undefined) return;
    const pod = this.d.pods.get(this.key);
    if (pod) this.labels = { ...pod.metadata?.labels };
    const status = cepStatus(this.ep, this.d.nodeIP, pod);
    if (this.uid === undefined) {
      await this.init(pod, status, signal);
      return;
    }
    const text = JSON.stringify([status, this.labels]);
    if (text === this.last) return;
    const outcome = await this.d.api.patch(this.namespace, this.name, this.uid, status, this.labels, signal);
    if (outcome !== 'patched') {
      // deleted or recreated by someone else: the next sync creates (or adopts) it again
      this.uid = undefined;
      this.last = undefined;
      throw new Error(`CiliumEndpoint ${this.key} was ${outcome === 'gone' ? 'deleted' : 'replaced'} by someone else; writing it again`);
    }
    this.last = text;
  }

  /** Creates the CiliumEndpoint, or adopts the one of this Pod, replacing one an earlier pod of that name left on this node. */
  private async init(pod: Pod | undefined, status: CepStatus, signal?: AbortSignal): Promise<void> {
    const owner = pod && podOwner(pod);
    if (!owner) throw podUnknown(this.key, this.d.nodeName);
    // a new pod's (the common case, in the CNI ADD's path): one request; one that exists answers 409 and is looked at
    const first = await this.d.api.create(newCep(pod, owner, status), signal);
    if (first) return this.created(first, owner.uid, status);
    const there = await this.d.api.get(this.namespace, this.name, signal);
    if (there) {
      const theirs = ownerPodUid(there);
      if (theirs === owner.uid) {
        this.adopt(there.metadata.uid!, owner.uid, JSON.stringify([there.status, there.metadata.labels ?? {}]));
        this.d.log.info({ endpointID: this.ep.id, cep: this.key }, 'CiliumEndpoint of this pod found; keeping it current');
        return this.syncOnce(signal);
      }
      if (there.status?.networking?.node !== this.d.nodeIP) throw cepTaken(this.key, `owned by pod uid ${theirs ?? 'none'} on node ${there.status?.networking?.node ?? 'unknown'}`);
      this.d.log.info({ endpointID: this.ep.id, cep: this.key, staleOwner: theirs }, 'replacing the CiliumEndpoint an earlier pod of this name left on this node');
      await this.d.api.delete(this.namespace, this.name, there.metadata.uid!, signal);
    }
    const made = await this.d.api.create(newCep(pod, owner, status), signal);
    if (!made) throw cepTaken(this.key, 'created by another writer meanwhile');
    this.created(made, owner.uid, status);
  }

  private created(made: CiliumEndpoint, ownerUid: string, status: CepStatus): void {
    this.adopt(made.metadata.uid!, ownerUid, JSON.stringify([status, this.labels]));
    this.d.log.info({ endpointID: this.ep.id, cep: this.key, uid: made.metadata.uid }, 'CiliumEndpoint created');
  }

  private adopt(uid: string, ownerUid: string, last: string): void {
    this.uid = uid;
    this.ownerUid = ownerUid;
    this.last = last;
  }

  /**
   * Deletes the CiliumEndpoint this sync wrote (uid precondition); when its create's answer was
   * lost (aborted), the one owned by the same Pod. Later syncs do nothing.
   */
  remove(signal?: AbortSignal): Promise<boolean> {
    this.removed = true;
    return this.serial(async () => {
      let uid = this.uid;
      if (uid === undefined && this.ownerUid === undefined) {
        const pod = this.d.pods.get(this.key);
        this.ownerUid = pod?.metadata?.uid;
      }
      if (uid === undefined) {
        const there = await this.d.api.get(this.namespace, this.name, signal);
        if (!there || !this.ownerUid || ownerPodUid(there) !== this.ownerUid || there.status?.networking?.node !== this.d.nodeIP) return false;
        uid = there.metadata.uid!;
      }
      const deleted = await this.d.api.delete(this.namespace, this.name, uid, signal);
      this.uid = undefined;
      return deleted;
    });
  }
}
