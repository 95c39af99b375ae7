/**
 * The apiserver as a ListWatcher: paged lists over HTTPS with the kubeconfig's credentials, and
 * @kubernetes/client-node's Watch with `allowWatchBookmarks`.
 */
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { k8sLib } from './client-lib.js';
import { apiFailed, apiNotServed } from './errors.js';
import type { K8sObject, ListWatcher, WatchEvent, WatchHandle } from './resource.js';

/** What to watch: a collection path and optional selectors. */
export interface ListWatchOptions {
  /** The collection, e.g. /api/v1/namespaces or /api/v1/namespaces/kube-system/pods. */
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Objects per list page (default 500). */
  readonly pageSize?: number;
  /** How long the apiserver keeps a watch open before ending it (s, default 300; it is then resumed). */
  readonly watchTimeoutSeconds?: number;
  /** Bound of each list request (ms, default 60000). */
  readonly requestTimeoutMs?: number;
}

interface ListPage<T> {
  apiVersion?: string;
  /** `<Kind>List`. */
  kind?: string;
  items?: T[];
  metadata?: { resourceVersion?: string; continue?: string };
}

/** A ListWatcher of the collection `opts.path` on the apiserver `kc` points at. */
export function apiListWatcher<T extends K8sObject>(kc: KubeConfig, opts: ListWatchOptions): ListWatcher<T> {
  const selectors = { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
  return {
    async list(signal?: AbortSignal) {
      const items: T[] = [];
      let resourceVersion = '';
      let cont: string | undefined;
      // Pages share the first page's snapshot (the continue token carries it); bounded by the count.
      for (let page = 0; page < 100_000; page++) {
        const body = await getJson<ListPage<T>>(kc, opts.path, {
          ...selectors, limit: String(opts.pageSize ?? 500), continue: cont,
        }, opts.requestTimeoutMs ?? 60_000, signal);
        items.push(...(body.items ?? []).map((item) => withTypeMeta(item, body)));
        if (page === 0) resourceVersion = body.metadata?.resourceVersion ?? '';
        cont = body.metadata?.continue || undefined;
        if (!cont) break;
      }
      if (!resourceVersion) throw apiFailed(`list ${opts.path}`, 'the answer has no metadata.resourceVersion');
      return { items, resourceVersion };
    },
    async watch(resourceVersion, onEvent): Promise<WatchHandle> {
      let settle!: { resolve: () => void; reject: (e: unknown) => void };
      const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      const w = new (k8sLib().Watch)(kc);
      const params = {
        ...selectors, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: opts.watchTimeoutSeconds ?? 300,
      };
      const ctrl = await w.watch(opts.path, params, (phase: string, obj: unknown) => onEvent(toEvent<T>(phase, obj)), (err: unknown) => {
        if (err) settle.reject(err);
        else settle.resolve();
      });
      return { done, stop: () => ctrl.abort() };
    },
  };
}

/**
 * A list item with its `apiVersion` and `kind`: the apiserver leaves them out of a list's items
 * (a watch event's object has them), and consumers check them (the policy translation refuses an
 * object of no kind). Taken from the list (`NetworkPolicyList` -> `NetworkPolicy`).
 */
function withTypeMeta<T>(item: T, list: { apiVersion?: string; kind?: string }): T {
  const o = item as { apiVersion?: string; kind?: string };
  if (o.kind && o.apiVersion) return item;
  const kind = list.kind?.endsWith('List') ? list.kind.slice(0, -4) : undefined;
  return { ...(list.apiVersion ? { apiVersion: list.apiVersion } : {}), ...(kind ? { kind } : {}), ...item };
}

function toEvent<T>(phase: string, obj: unknown): WatchEvent<T> {
  switch (phase) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      return { type: phase, object: obj as T };
    case 'BOOKMARK':
      return { type: 'BOOKMARK', resourceVersion: (obj as K8sObject)?.metadata?.resourceVersion ?? '' };
    case 'ERROR':
      return { type: 'ERROR', status: (obj ?? {}) as { code?: number; reason?: string; message?: string } };
    default:
      return { type: 'ERROR', status: { message: `unknown watch event type ${JSON.stringify(phase)}` } };
  }
}

/** GET `path?query` on the apiserver with the kubeconfig's credentials; the JSON body of a 2xx answer. */
export async function getJson<B>(kc: KubeConfig, path: string, query: Record<string, string | undefined>, timeoutMs: number, signal?: AbortSignal): Promise<B> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw apiFailed(`GET ${path}`, 'the kubeconfig has no current cluster');
  const url = new URL(cluster.server.replace(/\/$/, '') + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') url.searchParams.set(k, v);
  const opts: RequestOptions & { headers: Record<string, string> } = { method: 'GET', headers: { Accept: 'application/json' } };
  await kc.applyToHTTPSOptions(opts);
  const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise<B>((resolve, reject) => {
    const req = request(url, { ...opts, timeout: timeoutMs, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (e) => reject(apiFailed(`GET ${url.pathname}`, e.message, e)));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) {
          let msg = text.slice(0, 500);
          try {
            msg = (JSON.parse(text) as { message?: string }).message ?? msg;
          } catch {
            // not a Status object: the raw text says it
          }
          const err = status === 404 ? apiNotServed(url.pathname) : apiFailed(`GET ${url.pathname}`, `${status} ${msg.trim()}`);
          reject(Object.assign(err, { statusCode: status }));
          return;
        }
        try {
          resolve(JSON.parse(text) as B);
        } catch (e) {
          reject(apiFailed(`GET ${url.pathname}`, `the answer is not JSON: ${(e as Error).message}`, e));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => reject(apiFailed(`GET ${url.pathname}`, e.message, e)));
    req.end();
  });
}
