/**
 * Policy from Kubernetes (library; not yet a cell): NetworkPolicy, CiliumNetworkPolicy and
 * CiliumClusterwideNetworkPolicy objects translated into the policy cell's rules, each carrying
 * its origin (`k8s:io.cilium.k8s.policy.name/namespace/uid/derived-from`). See docs/cells/policy-k8s.md.
 */
export * from './types.js';
export { translateNetworkPolicy, originLabels } from './network-policy.js';
export { translateCNP, translateCCNP } from './cilium-policy.js';
export { NAMESPACE_LABELS_PREFIX } from './selectors.js';
