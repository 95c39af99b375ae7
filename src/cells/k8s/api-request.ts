/**
 * One JSON request to the apiserver with the kubeconfig's credentials (the CRD registration and
 * the CiliumEndpoint sync use it): bounded in time, aborted by the caller's signal, and every HTTP
 * status resolves (the caller decides what a 404 or a 409 means); only a request that got no
 * answer rejects, with a K8sError naming the method and the path.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { K8sError } from './errors.js';

/** Bounds of every request: its time, and the caller's abort. */
export interface RequestBounds {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** The body's media type (default application/json; a JSON patch: application/json-patch+json). */
  readonly contentType?: string;
}

/** An answer of the apiserver: its status, its parsed JSON body, the message of an error Status. */
export interface Answer {
  status: number;
  body: unknown;
  /** The Status message of an error answer (or its first 500 characters). */
  message: string;
}

/** Kept-alive agents by server and TLS material (a few: only a rotated certificate makes another). */
const agents = new Map<string, HttpsAgent>();
const MAX_AGENTS = 4;

/**
 * The kept-alive agent for the TLS options of `agent`. The library's applyToHTTPSOptions makes a
 * new https.Agent for every request, so each request paid a TLS handshake and a new secure context
 * (measured: the largest share of the agent's CPU for CiliumEndpoint writes while 20 pods start,
 * and as much again in the apiserver). A proxy agent, or anything else, is used as it is.
 */
function keptAlive(agent: unknown, server: string): unknown {
  if (!(agent instanceof HttpsAgent) || agent.constructor !== HttpsAgent) return agent;
  const o = agent.options;
  const key = createHash('sha256').update(JSON.stringify([server, o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized, o.ciphers])).digest('hex');
  let kept = agents.get(key);
  if (!kept) {
    if (agents.size >= MAX_AGENTS) {
      const [oldest, old] = agents.entries().next().value as [string, HttpsAgent];
      agents.delete(oldest);
      old.destroy();
    }
    kept = new HttpsAgent({ ...o, keepAlive: true, maxSockets: 16, scheduling: 'lifo' });
    agents.set(key, kept);
  }
  return kept;
}

/** One JSON request to the apiserver (see the module comment). */
export async function apiRequest(kc: KubeConfig, method: string, path: string, body: unknown, bounds: RequestBounds): Promise<Answer> {
  const { timeoutMs, signal } = bounds;
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new K8sError('config', 'kubernetes: the kubeconfig has no current cluster: set current-context');
  const url = new URL(cluster.server.replace(/\/$/, '') + path);
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = bounds.contentType ?? 'application/json';
  const opts: RequestOptions & { headers: Record<string, string> } = { method, headers };
  await kc.applyToHTTPSOptions(opts);
  opts.agent = keptAlive(opts.agent, cluster.server) as RequestOptions['agent'];
  const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise<Answer>((resolve, reject) => {
    const req = send(url, { ...opts, timeout: timeoutMs, ...(signal ? { signal } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (e) => reject(new K8sError('api', `kubernetes: ${method} ${path}: ${e.message}`, { cause: e })));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const message = (parsed as { message?: string } | undefined)?.message ?? text.slice(0, 500);
        resolve({ status: res.statusCode ?? 0, body: parsed, message });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => reject(new K8sError('api', `kubernetes: ${method} ${path}: ${e.message}; check that the apiserver is reachable`, { cause: e })));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
