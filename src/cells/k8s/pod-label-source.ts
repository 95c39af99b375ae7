/**
 * Pod endpoints' labels from Kubernetes: the labels of a Pod of this node and its Namespace
 * (pod-labels.ts), read from the Pods and Namespaces resources. A CNI ADD waits, at most
 * --k8s-pod-wait-timeout in all, for the cache-sync gate (a new pod gets the policy of the synced
 * caches, never only the restored one) and for the watch to bring its Pod.
 */
import { EMPTY, filter, map, merge, type Observable } from 'rxjs';
import type { PodLabelSource } from '../endpoint/index.js';
import { abortable } from '../../lib/abortable.js';
import type { CacheSyncGate } from './cache-sync.js';
import { cachesNotSynced, podNotSeen } from './errors.js';
import { podEndpointLabels } from './pod-labels.js';
import { podNamedPorts } from './pod-ports.js';
import type { NamedPort } from '../policy/types.js';
import type { Resource, ResourceEvent } from './resource.js';
import type { Namespace, Pod } from './types.js';

/** A change that may change the labels of pods: one pod (`namespace/name`) or every pod of a namespace. */
export type PodLabelChange = { readonly namespace: string; readonly pod?: string };

/** The Kubernetes PodLabelSource. */
export class K8sPodLabels implements PodLabelSource {
  constructor(
    private readonly pods: Resource<Pod> | undefined,
    private readonly namespaces: Resource<Namespace> | undefined,
    private readonly clusterName: string,
    private readonly nodeName: string,
    private readonly waitMs: number,
    /** Settles once every watched resource synced and the policy caught up (absent: not waited for). */
    private readonly gate?: CacheSyncGate,
  ) {}

  /** See PodLabelSource: only in Kubernetes mode. */
  get enabled(): boolean {
    return !!this.pods && !!this.namespaces;
  }

  /** The labels of pod `namespace/name` from the caches now, or undefined while either is not there. */
  current(namespace: string, name: string): string[] | undefined {
    const pod = this.pods?.get(`${namespace}/${name}`);
    const ns = this.namespaces?.get(namespace);
    return pod && ns ? podEndpointLabels(pod, ns, this.clusterName) : undefined;
  }

  /** See PodLabelSource: the named container ports of pod `namespace/name` from the cache now. */
  namedPorts(namespace: string, name: string): NamedPort[] | undefined {
    const pod = this.pods?.get(`${namespace}/${name}`);
    return pod ? podNamedPorts(pod) : undefined;
  }

  /** See PodLabelSource: waits for the cache-sync gate, then for the pod (bounded together). */
  async labelsFor(namespace: string, name: string, signal?: AbortSignal): Promise<readonly string[]> {
    const began = Date.now();
    if (this.gate && !this.gate.ready) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(cachesNotSynced(this.waitMs, this.gate!.waitingFor())), this.waitMs);
      });
      try {
        await Promise.race([signal ? abortable(this.gate.caughtUp, signal) : this.gate.caughtUp, timeout]);
      } finally {
        clearTimeout(timer);
      }
      signal?.throwIfAborted();
    }
    return this.podLabels(namespace, name, Math.max(0, this.waitMs - (Date.now() - began)), signal);
  }

  /** The pod's labels, waiting at most `waitMs` for the watch to bring it. */
  private podLabels(namespace: string, name: string, waitMs: number, signal?: AbortSignal): Promise<readonly string[]> {
    const now = this.current(namespace, name);
    if (now || !this.pods || !this.namespaces) return now ? Promise.resolve(now) : Promise.reject(new Error('Kubernetes is not configured'));
    return new Promise((resolve, reject) => {
      const finish = (fn: () => void): void => {
        clearTimeout(timer);
        sub.unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const onAbort = (): void => finish(() => reject(signal!.reason ?? new Error('aborted')));
      const timer = setTimeout(() => finish(() => reject(podNotSeen(namespace, name, this.nodeName, this.waitMs, !!this.pods!.get(`${namespace}/${name}`)))), waitMs);
      // not a job: one ADD's wait for its pod, unsubscribed when it is seen, times out or is aborted
      const sub = this.changes().subscribe(() => {
        const l = this.current(namespace, name);
        if (l) finish(() => resolve(l));
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Every change of a pod of this node or of a namespace. */
  changes(): Observable<PodLabelChange> {
    if (!this.pods || !this.namespaces) return EMPTY;
    const upserts = <T>(events: Observable<ResourceEvent<T>>): Observable<string> =>
      events.pipe(filter((e) => e.kind === 'upsert'), map((e) => (e as { key: string }).key));
    return merge(
      upserts(this.pods.events()).pipe(map((key) => ({ namespace: key.slice(0, key.indexOf('/')), pod: key.slice(key.indexOf('/') + 1) }))),
      upserts(this.namespaces.events()).pipe(map((key) => ({ namespace: key }))),
    );
  }
}
