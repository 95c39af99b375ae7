/**
 * The explain cell (module `explain`): which decision dropped a flow (a Hubble Flow, as `hubble
 * observe -o json` prints it) and the smallest CiliumNetworkPolicy or NetworkPolicy that would
 * allow exactly that flow, checked by tracing the policy repository with it added. Serves
 * `POST /v1/cellium/policy/explain` (`cellium explain`). docs/explain.md describes how it decides.
 */
export * from './types.js';
export { ExplainError, type ExplainErrorCode } from './errors.js';
export { Explainer, type ExplainerSources } from './explainer.js';
export { parseDroppedFlow, describeSide } from './flow.js';
export { dropReasonInfo } from './reasons.js';
export { ciliumProposal, k8sProposal, policyName, sideNamespace, type Proposed } from './propose.js';
export { explainDirection, decisionOf, flowPort } from './sections.js';
export { explainRouter, EXPLAIN_OPERATION_ID } from './routes.js';
export { explainCell } from './cell.js';
