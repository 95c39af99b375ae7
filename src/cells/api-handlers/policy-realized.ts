/**
 * GET /cellium/policy/realized (module `api-policy-realized`): how many endpoints realized a policy
 * revision, the lowest realized revision and the first ids still below it. A few numbers counted
 * over the endpoints' realized revisions, so a waiter (`cellium policy import --wait`, the scale
 * bench) need not list every endpoint's model (GET /endpoint: ~100 MB of JSON at 4,000 endpoints
 * under a broad policy, built by the agent it waits on).
 */
import type { Router } from 'express';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
import { EndpointManagerToken, type EndpointManager, type EndpointView } from '../endpoint/types.js';
import { PolicyRepositoryToken, type PolicyRepository } from '../policy/types.js';
import { domainErrors } from './errors.js';

/** How many pending endpoint ids an answer lists at most. */
export const MAX_PENDING = 20;

/** The CelliumPolicyRealized model. */
export interface PolicyRealized {
  readonly revision: number;
  readonly target: number;
  readonly endpoints: number;
  readonly realized: number;
  readonly 'min-realized-revision': number;
  readonly pending: number[];
}

/** Counts the endpoints that realized `target` (or newer); an endpoint not built yet counts as revision 0. */
export function policyRealized(revision: number, target: number, eps: readonly Pick<EndpointView, 'id' | 'realizedPolicyRevision'>[]): PolicyRealized {
  let realized = 0;
  let min = Infinity;
  const pending: number[] = [];
  for (const ep of eps) {
    const r = ep.realizedPolicyRevision ?? 0;
    if (r < min) min = r;
    if (r >= target) realized++;
    else pending.push(ep.id);
  }
  pending.sort((a, b) => a - b);
  return { revision, target, endpoints: eps.length, realized, 'min-realized-revision': eps.length ? min : 0, pending: pending.slice(0, MAX_PENDING) };
}

/** The router. */
export function policyRealizedRouter(ops: ApiOperations, repo: PolicyRepository, eps: EndpointManager): Router {
  const r = ops.router();
  ops.serve(r, 'GetCelliumPolicyRealized', (_req, res) => {
    const q = res.locals.api.query.revision as number | undefined;
    res.json(policyRealized(repo.revision, q ?? repo.revision, eps.getEndpoints()));
  });
  r.use(domainErrors);
  return r;
}

/** What the router works with. */
const policyRealizedDeps = { ops: ApiOperationsToken, repo: PolicyRepositoryToken, eps: EndpointManagerToken } as const;

/** The router, contributed to the API. */
function newPolicyRealizedRouter(d: DepsValues<typeof policyRealizedDeps>): ApiRouterGroup {
  return { name: 'policy-realized', router: policyRealizedRouter(d.ops, d.repo, d.eps) };
}

/** The policy-realization API handler cell. */
export const policyRealizedHandlersCell = module(
  'api-policy-realized',
  'Policy realization API handler',
  provideInto(ApiRoutersToken, newPolicyRealizedRouter, policyRealizedDeps),
);
