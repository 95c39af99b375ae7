/** The explain cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiRouterGroup } from '../api-server/types.js';
import { EndpointManagerToken } from '../endpoint/types.js';
import { IdentityAllocatorToken } from '../identity/types.js';
import { ServiceManagerToken } from '../loadbalancer/types.js';
import { PolicyRepositoryToken } from '../policy/types.js';
import { Explainer } from './explainer.js';
import { explainRouter } from './routes.js';
import { FlowExplainerToken, type FlowExplainer } from './types.js';

/** What the explainer reads: the policy repository, endpoints, identities, services. */
const explainerDeps = {
  repo: PolicyRepositoryToken,
  endpoints: EndpointManagerToken,
  identities: IdentityAllocatorToken,
  services: ServiceManagerToken,
} as const;

/** Builds the explainer. */
function newExplainer(d: DepsValues<typeof explainerDeps>): FlowExplainer {
  return new Explainer(d);
}

/** What the explain API router works with. */
const routerDeps = { ops: ApiOperationsToken, explainer: FlowExplainerToken } as const;

/** The explain router, contributed to the API. */
function newExplainRouter(d: DepsValues<typeof routerDeps>): ApiRouterGroup {
  return { name: 'explain', router: explainRouter(d.ops, d.explainer) };
}

/** The explain cell. */
export const explainCell = module(
  'explain',
  'Explains dropped flows: the decision that dropped one and the smallest policy allowing it, checked by a policy trace',
  provide(FlowExplainerToken, newExplainer, explainerDeps),
  provideInto(ApiRoutersToken, newExplainRouter, routerDeps),
);
