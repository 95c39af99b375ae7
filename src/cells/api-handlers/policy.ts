/**
 * Policy API handlers (module `api-policy`): GET|PUT|DELETE /policy, GET /policy/selectors and our
 * GET /cellium/policy/trace. Thin calls into the PolicyRepository; an invalid policy is a 400
 * naming the field inside the policy text (`/body/0/spec/ingress/0/toPorts`).
 */
import type { Router } from 'express';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
import { PolicyError } from '../policy/types.js';
import { PolicyRepositoryToken, type PolicyRepository, type TraceResult, type TraceSubject } from '../policy/types.js';
import { badField, notFound } from '../api-server/index.js';
import { domainErrors } from './errors.js';
import { parseFilter } from './labels.js';

/** Cilium's Policy model: the revision and the rules as JSON text. */
export function policyModel(repo: PolicyRepository, labels?: readonly string[]): { revision: number; policy: string } {
  return { revision: repo.revision, policy: JSON.stringify(repo.get(labels), null, 2) };
}

/** One side of a trace from the query: labels (`src`) or an identity (`src-identity`), exactly one. */
function subject(query: Readonly<Record<string, unknown>>, side: 'src' | 'dst'): TraceSubject {
  const labels = query[side] as string[] | undefined;
  const identity = query[`${side}-identity`] as number | undefined;
  if ((labels?.length ?? 0) > 0 && identity !== undefined) {
    throw badField(`/query/${side}-identity`, `give the ${side} as labels (${side}) or as an identity (${side}-identity), not both`, 'one of the two');
  }
  if (identity !== undefined) return { identity };
  if (!labels?.length) throw badField(`/query/${side}`, `the ${side} is required: labels (${side}=k8s:app=web) or ${side}-identity`, 'labels or an identity');
  return { labels };
}

/** A trace direction as the TraceDirection model has it (the verdict, enforcement and deciding rules). */
function traceDirection(d: TraceResult['ingress']): { verdict: 'allowed' | 'denied'; enforced: boolean; rules: string[] } {
  return { verdict: d.verdict, enforced: d.enforced, rules: [...d.rules] };
}

/** The policy router. */
export function policyRouter(ops: ApiOperations, repo: PolicyRepository): Router {
  const labelsOf = (body: unknown): string[] => {
    parseFilter(body);
    return (body as string[] | undefined) ?? [];
  };
  const r = ops.router();
  ops.serve(r, 'GetPolicy', (_req, res) => {
    const labels = labelsOf(res.locals.api.body);
    if (labels.length && repo.get(labels).length === 0) throw notFound(`no policy rule has the labels ${labels.join(', ')}`);
    res.json(policyModel(repo, labels));
  });
  ops.serve(r, 'PutPolicy', (_req, res) => {
    const { body, query } = res.locals.api;
    const replace = (query['replace-with-labels'] as string[] | undefined) ?? [];
    // one change: the rules with those labels go and the new ones come, or nothing changes
    repo.import(String(body), { replaceWithLabels: replace });
    res.json(policyModel(repo));
  });
  ops.serve(r, 'DeletePolicy', (_req, res) => {
    const labels = labelsOf(res.locals.api.body);
    const change = repo.delete(labels.length ? labels : 'all');
    if (labels.length && change.deleted === 0) throw notFound(`no policy rule has the labels ${labels.join(', ')}`);
    res.json(policyModel(repo));
  });
  ops.serve(r, 'GetPolicySelectors', (_req, res) => {
    res.json(repo.selectors().map((s) => ({ selector: s.selector, identities: [...s.identities], users: s.users })));
  });
  ops.serve(r, 'GetCelliumPolicyTrace', (_req, res) => {
    const { query } = res.locals.api;
    const src = subject(query, 'src');
    const dst = subject(query, 'dst');
    try {
      const t = repo.trace(src, dst, Number(query.dport), String(query.proto ?? 'TCP'));
      res.json({ verdict: t.verdict, ingress: traceDirection(t.ingress), egress: traceDirection(t.egress), log: [...t.log] });
    } catch (err) {
      if (!(err instanceof PolicyError)) throw err;
      const m = /^\/(src|dst)\/(identity|labels)/.exec(err.pointer);
      const field = m ? `/query/${m[1]}${m[2] === 'identity' ? '-identity' : ''}` : '/query';
      throw badField(field, err.message, err.fix);
    }
  });
  r.use(domainErrors);
  return r;
}

/** What the policy router works with. */
const policyRouterDeps = { ops: ApiOperationsToken, repo: PolicyRepositoryToken } as const;

/** The policy router, contributed to the API. */
function newPolicyRouter(d: DepsValues<typeof policyRouterDeps>): ApiRouterGroup {
  return { name: 'policy', router: policyRouter(d.ops, d.repo) };
}

/** The policy API handler cell. */
export const policyHandlersCell = module(
  'api-policy',
  'Policy API handlers',
  provideInto(ApiRoutersToken, newPolicyRouter, policyRouterDeps),
);
