/**
 * The k8s cache-sync gate (Cilium's k8sCachesSynced): until every resource the agent watches has
 * listed once, what was restored from the state directory stays in force (fail closed): the
 * policy-k8s cell neither prunes nor replaces the restored policy, and restored endpoints are not
 * relabelled (a new identity with policy not yet caught up could allow more). Consumers that must
 * catch up before that happens register at construction (`hold`) and release once done;
 * `caughtUp` settles after the resources synced and every holder released. An apiserver down at
 * start leaves the gate closed, the agent running and enforcing what it restored.
 */
import type { Health } from '../../hive/health.js';
import type { K8sObject, Resource } from './resource.js';

/** A watched resource as the gate sees it. */
export interface GatedResource {
  readonly name: string;
  readonly resource: Resource<K8sObject> | undefined;
}

/** The gate (see the module comment). */
export class CacheSyncGate {
  /** Settles once every watched resource has synced (at once without Kubernetes: nothing to wait for). */
  readonly synced: Promise<void>;
  /** Settles once synced and every holder released. */
  readonly caughtUp: Promise<void>;
  private readonly holders = new Map<string, () => void>();
  private readonly held: Promise<void>[] = [];
  private isSynced = false;
  private isCaughtUp = false;
  private frozen = false;

  constructor(
    private readonly resources: readonly GatedResource[],
    private readonly health: Health,
  ) {
    const live = resources.filter((r) => r.resource);
    this.synced = Promise.all(live.map((r) => r.resource!.synced.then(() => this.report()))).then(() => {
      this.isSynced = true;
    });
    // holders register while the cells are constructed; the list is read once the resources synced
    this.caughtUp = this.synced.then(async () => {
      this.frozen = true;
      this.report();
      await Promise.all(this.held);
      this.isCaughtUp = true;
      this.report();
    });
    this.report();
  }

  /** Whether every watched resource has synced. */
  get open(): boolean {
    return this.isSynced;
  }

  /** Whether the resources synced and every holder caught up. */
  get ready(): boolean {
    return this.isCaughtUp;
  }

  /** The resources not synced yet. */
  waitingFor(): string[] {
    return this.resources.filter((r) => r.resource && !r.resource.status().synced).map((r) => r.name);
  }

  /**
   * Registers `name` as a consumer `caughtUp` waits for (call at construction); returns its
   * release, to call once it applied what the synced caches hold.
   */
  hold(name: string): () => void {
    if (this.frozen) throw new Error(`cache-sync gate: ${name} registered after the caches synced: hold at construction`);
    let release!: () => void;
    this.held.push(new Promise<void>((r) => (release = r)));
    const done = (): void => {
      this.holders.delete(name);
      release();
      this.report();
    };
    this.holders.set(name, done);
    return done;
  }

  private report(): void {
    if (!this.resources.some((r) => r.resource)) {
      this.health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
      return;
    }
    if (this.isCaughtUp) {
      this.health.ok('synced: every watched resource listed; Kubernetes state applied');
      return;
    }
    const waiting = this.waitingFor();
    if (waiting.length) {
      this.health.ok(`waiting for ${waiting.join(', ')} to sync: the restored policy and endpoint labels stay in force until then`);
      return;
    }
    this.health.ok(`synced; waiting for ${[...this.holders.keys()].join(', ') || 'the consumers'} to apply it`);
  }
}
