/**
 * Policy API handlers (module `api-policy`): GET|PUT|DELETE /policy, GET /policy/selectors and our
 * GET /cellium/policy/trace. Thin calls into the PolicyRepository; an invalid policy is a 400
 * naming the field inside the policy text (`/body/0/spec/ingress/0/toPorts`).
 */
import { module, provideInto } from '../../hive/cell.js';
import { ApiRoutesToken, ok, type ApiRequest, type ApiRouteGroup } from '../api-server/types.js';
import { PolicyError } from '../policy/errors.js';
import { PolicyRepositoryToken, type PolicyRepository, type TraceSubject } from '../policy/types.js';
import { badField, mapped, notFound } from './errors.js';
import { parseFilter } from './labels.js';

/** Cilium's Policy model: the revision and the rules as JSON text. */
export function policyModel(repo: PolicyRepository, labels?: readonly string[]): { revision: number; policy: string } {
  return { revision: repo.revision, policy: JSON.stringify(repo.get(labels), null, 2) };
}

/** One side of a trace from the query: labels (`src`) or an identity (`src-identity`), exactly one. */
function subject(req: ApiRequest, side: 'src' | 'dst'): TraceSubject {
  const labels = req.query[side] as string[] | undefined;
  const identity = req.query[`${side}-identity`] as number | undefined;
  if ((labels?.length ?? 0) > 0 && identity !== undefined) {
    throw badField(`/query/${side}-identity`, `give the ${side} as labels (${side}) or as an identity (${side}-identity), not both`, 'one of the two');
  }
  if (identity !== undefined) return { identity };
  if (!labels?.length) throw badField(`/query/${side}`, `the ${side} is required: labels (${side}=k8s:app=web) or ${side}-identity`, 'labels or an identity');
  return { labels };
}

/** The policy route group. */
export function policyRoutes(repo: PolicyRepository): ApiRouteGroup {
  const labelsOf = (req: ApiRequest): string[] => {
    parseFilter(req.body);
    return (req.body as string[] | undefined) ?? [];
  };
  return {
    name: 'policy',
    routes: [
      {
        operationId: 'GetPolicy',
        handle: (req) =>
          mapped([400, 404], () => {
            const labels = labelsOf(req);
            if (labels.length && repo.get(labels).length === 0) throw notFound(`no policy rule has the labels ${labels.join(', ')}`);
            return ok(policyModel(repo, labels));
          }),
      },
      {
        operationId: 'PutPolicy',
        handle: (req) =>
          mapped([400, 500], () => {
            const replace = (req.query['replace-with-labels'] as string[] | undefined) ?? [];
            // one change: the rules with those labels go and the new ones come, or nothing changes
            repo.import(String(req.body), { replaceWithLabels: replace });
            return ok(policyModel(repo));
          }),
      },
      {
        operationId: 'DeletePolicy',
        handle: (req) =>
          mapped([400, 404, 500], () => {
            const labels = labelsOf(req);
            const change = repo.delete(labels.length ? labels : 'all');
            if (labels.length && change.deleted === 0) throw notFound(`no policy rule has the labels ${labels.join(', ')}`);
            return ok(policyModel(repo));
          }),
      },
      {
        operationId: 'GetPolicySelectors',
        handle: () => ok(repo.selectors().map((s) => ({ selector: s.selector, identities: [...s.identities], users: s.users }))),
      },
      {
        operationId: 'GetCelliumPolicyTrace',
        handle: (req) => {
          const src = subject(req, 'src');
          const dst = subject(req, 'dst');
          try {
            const r = repo.trace(src, dst, Number(req.query.dport), String(req.query.proto ?? 'TCP'));
            return ok({
              verdict: r.verdict,
              ingress: { ...r.ingress, rules: [...r.ingress.rules] },
              egress: { ...r.egress, rules: [...r.egress.rules] },
              log: [...r.log],
            });
          } catch (err) {
            if (!(err instanceof PolicyError)) throw err;
            const m = /^\/(src|dst)\/(identity|labels)/.exec(err.pointer);
            const field = m ? `/query/${m[1]}${m[2] === 'identity' ? '-identity' : ''}` : '/query';
            throw badField(field, err.message, err.fix);
          }
        },
      },
    ],
  };
}

/** The policy API handler cell. */
export const policyHandlersCell = module('api-policy', 'Policy API handlers', provideInto(ApiRoutesToken, policyRoutes, PolicyRepositoryToken));
