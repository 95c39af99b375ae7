/**
 * The CiliumEndpoint calls the agent makes, with the verbs deploy/rbac.yaml grants for them: get
 * (adopt an existing one), create, patch (a JSON patch that first tests the object's uid, as
 * Cilium's sync does, so a CiliumEndpoint recreated by someone else is never overwritten), delete
 * with a uid precondition (only the one this agent wrote), and list (the stale ones after a restart).
 */
import type { K8sClient } from '../k8s/index.js';
import { apiRequest, type Answer } from '../k8s/index.js';
import type { CiliumEndpoint, CepStatus } from './cep.js';
import { cepRequestFailed } from './errors.js';

/** Bound of every CiliumEndpoint request (ms). */
export const CEP_REQUEST_TIMEOUT_MS = 10_000;

const BASE = '/apis/cilium.io/v2';

function path(namespace: string, name?: string): string {
  return `${BASE}/namespaces/${encodeURIComponent(namespace)}/ciliumendpoints${name ? `/${encodeURIComponent(name)}` : ''}`;
}

function ok(a: Answer): boolean {
  return a.status >= 200 && a.status <= 299;
}

/** What a patch found. */
export type PatchOutcome = 'patched' | 'gone' | 'replaced';

/** The CiliumEndpoint API of one client. */
export class CepApi {
  constructor(private readonly client: K8sClient) {}

  private call(method: string, p: string, body: unknown, signal?: AbortSignal, contentType?: string): Promise<Answer> {
    return apiRequest(this.client.kubeConfig(), method, p, body, {
      timeoutMs: CEP_REQUEST_TIMEOUT_MS, ...(signal ? { signal } : {}), ...(contentType ? { contentType } : {}),
    });
  }

  /** The CiliumEndpoint `namespace/name`, or undefined when there is none. */
  async get(namespace: string, name: string, signal?: AbortSignal): Promise<CiliumEndpoint | undefined> {
    const a = await this.call('GET', path(namespace, name), undefined, signal);
    if (a.status === 404) return undefined;
    if (!ok(a)) throw cepRequestFailed('get', `${namespace}/${name}`, a.status, a.message);
    return a.body as CiliumEndpoint;
  }

  /** Creates it; undefined when one of that name exists already (409). */
  async create(cep: CiliumEndpoint, signal?: AbortSignal): Promise<CiliumEndpoint | undefined> {
    const ns = cep.metadata.namespace ?? 'default';
    const a = await this.call('POST', path(ns), cep, signal);
    if (a.status === 409) return undefined;
    if (!ok(a)) throw cepRequestFailed('create', `${ns}/${cep.metadata.name}`, a.status, a.message);
    return a.body as CiliumEndpoint;
  }

  /**
   * Replaces the status and labels of the CiliumEndpoint whose uid is `uid`: `gone` when there is
   * none of that name, `replaced` when the one there has another uid (the patch's test failed).
   */
  async patch(namespace: string, name: string, uid: string, status: CepStatus, labels: Readonly<Record<string, string>>, signal?: AbortSignal): Promise<PatchOutcome> {
    const ops = [
      { op: 'test', path: '/metadata/uid', value: uid },
      { op: 'replace', path: '/status', value: status },
      { op: 'add', path: '/metadata/labels', value: labels },
    ];
    const a = await this.call('PATCH', path(namespace, name), ops, signal, 'application/json-patch+json');
    if (a.status === 404) return 'gone';
    // a failed test op is 422 (Invalid) on the apiserver; a uid precondition conflict is 409
    if (a.status === 422 || a.status === 409) return 'replaced';
    if (!ok(a)) throw cepRequestFailed('patch', `${namespace}/${name}`, a.status, a.message);
    return 'patched';
  }

  /** Deletes it if its uid is still `uid`; false when it was gone or is another object now. */
  async delete(namespace: string, name: string, uid: string, signal?: AbortSignal): Promise<boolean> {
    const a = await this.call('DELETE', path(namespace, name), { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid } }, signal);
    if (a.status === 404 || a.status === 409) return false;
    if (!ok(a)) throw cepRequestFailed('delete', `${namespace}/${name}`, a.status, a.message);
    return true;
  }

  /** Every CiliumEndpoint of the cluster (paged). */
  async list(signal?: AbortSignal): Promise<CiliumEndpoint[]> {
    const out: CiliumEndpoint[] = [];
    let cont = '';
    for (let page = 0; page < 10_000; page++) {
      const q = `?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
      const a = await this.call('GET', `${BASE}/ciliumendpoints${q}`, undefined, signal);
      if (!ok(a)) throw cepRequestFailed('list', '(all namespaces)', a.status, a.message);
      const body = a.body as { items?: CiliumEndpoint[]; metadata?: { continue?: string } };
      out.push(...(body.items ?? []));
      cont = body.metadata?.continue ?? '';
      if (!cont) break;
    }
    return out;
  }
}
