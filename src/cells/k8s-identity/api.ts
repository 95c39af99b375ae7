/**
 * The CiliumIdentity and Lease calls the k8s-identity cell makes, with the verbs deploy/rbac.yaml
 * grants for them: CiliumIdentity get, create (create-only: a 409 says the number is taken),
 * patch (the GC's mark, added and removed with a JSON patch that first tests what it expects) and
 * delete (with uid and resourceVersion preconditions, as cilium-operator's GC); Lease get, create
 * and update (the GC's leader election).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { apiRequest, type Answer, type K8sClient } from '../k8s/index.js';
import { noAnswer, requestFailed } from './errors.js';

/** Bound of every request (ms). */
export const IDENTITY_REQUEST_TIMEOUT_MS = 10_000;

/** The annotation cilium-operator's GC marks an unused identity with (its value: when, RFC 3339). */
export const HEARTBEAT_ANNOTATION = 'io.cilium.heartbeat';

/** A cilium.io/v2 CiliumIdentity as the apiserver sends it (the fields read). */
export interface CiliumIdentity {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  /** source:key -> value. */
  readonly 'security-labels'?: Readonly<Record<string, string>>;
}

/** A coordination.k8s.io/v1 Lease (the fields used). */
export interface Lease {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly resourceVersion?: string };
  readonly spec?: {
    readonly holderIdentity?: string;
    readonly leaseDurationSeconds?: number;
    readonly acquireTime?: string;
    readonly renewTime?: string;
    readonly leaseTransitions?: number;
  };
}

const IDS = '/apis/cilium.io/v2/ciliumidentities';

function ok(a: Answer): boolean {
  return a.status >= 200 && a.status <= 299;
}

/** One client's CiliumIdentity and Lease API. */
export class IdentityApi {
  constructor(private readonly client: Pick<K8sClient, 'kubeConfig'>) {}

  private async call(verb: string, resource: string, name: string, method: string, path: string, body: unknown, signal?: AbortSignal, contentType?: string): Promise<Answer> {
    let kc: KubeConfig;
    try {
      kc = this.client.kubeConfig();
      return await apiRequest(kc, method, path, body, { timeoutMs: IDENTITY_REQUEST_TIMEOUT_MS, ...(signal ? { signal } : {}), ...(contentType ? { contentType } : {}) });
    } catch (err) {
      throw noAnswer(verb, resource, name, err);
    }
  }

  /** The identity of this number, or undefined. */
  async get(name: string, signal?: AbortSignal): Promise<CiliumIdentity | undefined> {
    const a = await this.call('get', 'ciliumidentities', name, 'GET', `${IDS}/${name}`, undefined, signal);
    if (a.status === 404) return undefined;
    if (!ok(a)) throw requestFailed('get', 'ciliumidentities', name, a.status, a.message);
    return a.body as CiliumIdentity;
  }

  /** Creates it; `exists` when the number is taken (409 AlreadyExists). */
  async create(obj: CiliumIdentity, signal?: AbortSignal): Promise<CiliumIdentity | 'exists'> {
    const name = obj.metadata.name;
    const a = await this.call('create', 'ciliumidentities', name, 'POST', IDS, obj, signal);
    if (a.status === 409) return 'exists';
    if (!ok(a)) throw requestFailed('create', 'ciliumidentities', name, a.status, a.message);
    return a.body as CiliumIdentity;
  }

  /**
   * Adds the GC's mark if the object is still at `resourceVersion` (the GC saw it unused at that
   * version); false when it changed or is gone.
   */
  async mark(name: string, resourceVersion: string, hasAnnotations: boolean, stamp: string, signal?: AbortSignal): Promise<boolean> {
    const ops = [
      { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
      hasAnnotations ? { op: 'add', path: `/metadata/annotations/${HEARTBEAT_ANNOTATION}`, value: stamp } : { op: 'add', path: '/metadata/annotations', value: { [HEARTBEAT_ANNOTATION]: stamp } },
    ];
    return this.patch('mark', name, ops, signal);
  }

  /** Removes the GC's mark if it is still `stamp`; false when it is not (gone, or another mark). */
  async unmark(name: string, stamp: string, signal?: AbortSignal): Promise<boolean> {
    const path = `/metadata/annotations/${HEARTBEAT_ANNOTATION}`;
    return this.patch('unmark', name, [{ op: 'test', path, value: stamp }, { op: 'remove', path }], signal);
  }

  private async patch(what: string, name: string, ops: unknown[], signal?: AbortSignal): Promise<boolean> {
    const a = await this.call('patch', 'ciliumidentities', name, 'PATCH', `${IDS}/${name}`, ops, signal, 'application/json-patch+json');
    // a failed test op is 422 on the apiserver
    if (a.status === 404 || a.status === 422 || a.status === 409) return false;
    if (!ok(a)) throw requestFailed(`patch (${what})`, 'ciliumidentities', name, a.status, a.message);
    return true;
  }

  /** Deletes it if it is still this object at this version; false when it changed or is gone. */
  async delete(name: string, uid: string, resourceVersion: string, signal?: AbortSignal): Promise<boolean> {
    const body = { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid, resourceVersion } };
    const a = await this.call('delete', 'ciliumidentities', name, 'DELETE', `${IDS}/${name}`, body, signal);
    if (a.status === 404 || a.status === 409) return false;
    if (!ok(a)) throw requestFailed('delete', 'ciliumidentities', name, a.status, a.message);
    return true;
  }

  /** The Lease, or undefined. */
  async getLease(namespace: string, name: string, signal?: AbortSignal): Promise<Lease | undefined> {
    const a = await this.call('get', 'leases', `${namespace}/${name}`, 'GET', leasePath(namespace, name), undefined, signal);
    if (a.status === 404) return undefined;
    if (!ok(a)) throw requestFailed('get', 'leases.coordination.k8s.io', `${namespace}/${name}`, a.status, a.message);
    return a.body as Lease;
  }

  /** Creates the Lease; undefined when one exists (409). */
  async createLease(lease: Lease, signal?: AbortSignal): Promise<Lease | undefined> {
    const ns = lease.metadata.namespace ?? 'kube-system';
    const a = await this.call('create', 'leases', `${ns}/${lease.metadata.name}`, 'POST', leasePath(ns), lease, signal);
    if (a.status === 409) return undefined;
    if (!ok(a)) throw requestFailed('create', 'leases.coordination.k8s.io', `${ns}/${lease.metadata.name}`, a.status, a.message);
    return a.body as Lease;
  }

  /** Replaces the Lease if it is still at its metadata.resourceVersion; undefined when it changed (409). */
  async updateLease(lease: Lease, signal?: AbortSignal): Promise<Lease | undefined> {
    const ns = lease.metadata.namespace ?? 'kube-system';
    const a = await this.call('update', 'leases', `${ns}/${lease.metadata.name}`, 'PUT', leasePath(ns, lease.metadata.name), lease, signal);
    if (a.status === 409 || a.status === 404) return undefined;
    if (!ok(a)) throw requestFailed('update', 'leases.coordination.k8s.io', `${ns}/${lease.metadata.name}`, a.status, a.message);
    return a.body as Lease;
  }
}

function leasePath(namespace: string, name?: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases${name ? `/${encodeURIComponent(name)}` : ''}`;
}
