/**
 * The EndpointSynchronizer (Cilium's pkg/endpointmanager/endpointsynchronizer.go): a controller per
 * pod endpoint (`endpoint-<id>-sync-to-k8s-ciliumendpoint`, the hive's controller manager) keeps its
 * CiliumEndpoint current; a CNI ADD's creation waits until it is written (an EndpointCreationHook,
 * bounded by --k8s-cep-create-timeout); a removed endpoint's CiliumEndpoint is deleted (retried
 * with backoff while the apiserver does not answer); after a restart, CiliumEndpoints of this node
 * (status.networking.node = this node's address, as Cilium tells them) without an endpoint are
 * removed. One CiliumEndpoint per pod: a second endpoint of the same pod gets none.
 */
import type { ControllerManager, Health, Logger } from '../../hive/index.js';
import { sleep } from '../../hive/index.js';
import type { EndpointCreationHook, EndpointView } from '../endpoint/index.js';
import type { Pod, Resource } from '../k8s/index.js';
import type { CepApi } from './api.js';
import { CepSync } from './endpoint-sync.js';

/** How often a controller compares the endpoint with what it wrote (a local comparison; the apiserver is written only on change). */
export const CEP_SYNC_INTERVAL_MS = 1000;

/** What the synchronizer uses. */
export interface SynchronizerDeps {
  readonly api: CepApi;
  readonly pods: Resource<Pod>;
  readonly controllers: ControllerManager;
  readonly nodeIP: string;
  readonly nodeName: string;
  /** How long a creation waits for its CiliumEndpoint (ms). */
  readonly createTimeoutMs: number;
  readonly health: Health;
  readonly log: Logger;
}

/** The controller name of endpoint `id`'s CiliumEndpoint sync (listed among the endpoint's controllers). */
export function cepControllerName(id: number): string {
  return `endpoint-${id}-sync-to-k8s-ciliumendpoint`;
}

/** Keeps the CiliumEndpoints of this node's pod endpoints (see the module comment). */
export class EndpointSynchronizer implements EndpointCreationHook {
  readonly name = 'CiliumEndpoint';
  private readonly syncs = new Map<number, CepSync>();
  private readonly byKey = new Map<string, number>();
  private readonly failing = new Map<string, string>();
  private readonly deletions = new Set<Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(private readonly d: SynchronizerDeps) {
    this.report();
  }

  /** Starts the sync of a pod endpoint (created or restored); other endpoints have no CiliumEndpoint. */
  add(ep: EndpointView): void {
    const ns = ep.namespace;
    const key = ep.podName;
    if (!ns || !key || !key.startsWith(`${ns}/`) || this.syncs.has(ep.id)) return;
    const holder = this.byKey.get(key);
    if (holder !== undefined) {
      this.d.log.info({ endpointID: ep.id, cep: key, holder }, 'another endpoint of this pod has its CiliumEndpoint; none for this one');
      return;
    }
    const s = new CepSync(ep, ns, key.slice(ns.length + 1), this.d);
    this.syncs.set(ep.id, s);
    this.byKey.set(key, ep.id);
    this.d.controllers.updateController(cepControllerName(ep.id), {
      doFunc: async (signal) => {
        try {
          await s.sync(signal);
          this.outcome(key);
        } catch (err) {
          if (!signal.aborted) this.outcome(key, (err as Error).message);
          throw err;
        }
      },
      runIntervalMs: CEP_SYNC_INTERVAL_MS,
      errorRetryBaseMs: 1000,
      maxRetryIntervalMs: 30_000,
    });
    this.report();
  }

  /** See EndpointCreationHook: waits until the endpoint's CiliumEndpoint is written (nothing for other endpoints). */
  async created(ep: EndpointView, signal?: AbortSignal): Promise<void> {
    const s = this.syncs.get(ep.id);
    if (!s) return;
    await s.ensure(this.d.createTimeoutMs, signal);
    this.outcome(s.key);
  }

  /** Stops the sync of a removed endpoint and deletes its CiliumEndpoint (retried until it succeeds or the agent stops). */
  remove(ep: EndpointView): void {
    const s = this.syncs.get(ep.id);
    if (!s) return;
    this.syncs.delete(ep.id);
    this.byKey.delete(s.key);
    this.failing.delete(s.key);
    this.report();
    const p = this.deleteCep(ep.id, s).finally(() => this.deletions.delete(p));
    this.deletions.add(p);
  }

  private async deleteCep(id: number, s: CepSync): Promise<void> {
    await this.d.controllers.removeController(cepControllerName(id));
    const signal = this.stopping.signal;
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        const deleted = await s.remove(signal);
        this.d.log.info({ endpointID: id, cep: s.key, deleted }, deleted ? 'CiliumEndpoint deleted' : 'CiliumEndpoint already gone (or not this endpoint\'s)');
        this.outcome(`delete ${s.key}`);
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.outcome(`delete ${s.key}`, (err as Error).message);
        if (attempt === 0) this.d.log.warn({ endpointID: id, cep: s.key, err: (err as Error).message }, 'deleting the CiliumEndpoint failed; retrying');
        await sleep(Math.min(30_000, 500 * 2 ** Math.min(attempt, 6)), signal).catch(() => undefined);
      }
    }
  }

  /**
   * Deletes the CiliumEndpoints of this node that no endpoint has (left while the agent was down,
   * or by an ADD whose rollback could not reach the apiserver). Returns their keys.
   */
  async removeStale(signal?: AbortSignal): Promise<string[]> {
    const removed: string[] = [];
    for (const cep of await this.d.api.list(signal)) {
      const ns = cep.metadata.namespace ?? 'default';
      const key = `${ns}/${cep.metadata.name}`;
      if (cep.status?.networking?.node !== this.d.nodeIP || this.byKey.has(key) || !cep.metadata.uid) continue;
      if (await this.d.api.delete(ns, cep.metadata.name, cep.metadata.uid, signal)) {
        removed.push(key);
        this.d.log.info({ cep: key }, 'stale CiliumEndpoint of this node removed (no endpoint has it)');
      }
    }
    return removed;
  }

  /** Stops the deletions in flight (agent stop: the rest is done at the next start's stale sweep). */
  async stop(): Promise<void> {
    this.stopping.abort(new Error('agent stopping'));
    await Promise.all([...this.deletions]);
  }

  private outcome(what: string, err?: string): void {
    const before = this.failing.get(what);
    if (err === undefined) this.failing.delete(what);
    else this.failing.set(what, err);
    if (before !== err) this.report();
  }

  private report(): void {
    if (this.failing.size === 0) {
      this.d.health.ok(`${this.syncs.size} CiliumEndpoints in sync`);
      return;
    }
    const list = [...this.failing].slice(0, 5).map(([k, e]) => `${k}: ${e}`);
    this.d.health.degraded(`${this.failing.size} CiliumEndpoint(s) not in sync: ${list.join('; ')}`);
  }
}
