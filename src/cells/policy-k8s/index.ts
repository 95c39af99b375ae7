/**
 * Policy from Kubernetes (the policy-k8s cell): NetworkPolicy, CiliumNetworkPolicy and
 * CiliumClusterwideNetworkPolicy objects translated into the policy cell's rules, each carrying
 * its origin (`k8s:io.cilium.k8s.policy.name/namespace/uid/derived-from`). See docs/cells/policy-k8s.md.
 */
export * from './types.js';
export { translateNetworkPolicy, originLabels } from './network-policy.js';
export { translateCNP, translateCCNP } from './cilium-policy.js';
export { NAMESPACE_LABELS_PREFIX } from './selectors.js';
export { PolicyReconciler, objectLabels, ruleObjectKey, type PolicyKind, type PolicyEvent, type PolicyObject, type InvalidReporter } from './reconcile.js';
export { invalidPolicyEvent, eventReporter, onceReporter, REPORTED_CAPACITY } from './events.js';
export { policyK8sCell } from './cell.js';
