/**
 * The policy cell (module `policy`): the PolicyRepository (CiliumNetworkPolicy rules in JSON or
 * YAML), its SelectorCache fed incrementally by IdentityAllocator.changes$, distillation into the
 * datapath's map state, and policy trace; the policy store in the state directory, restored at
 * start (PolicyRestoreToken: the endpoint restore waits for it). Needs IdentityAllocatorToken (the
 * identity cell) and StateDirConfigToken (the statedir cell).
 */
export * from './types.js';
export { PolicyError, PolicyStoreError, type PolicyErrorCode } from './errors.js';
export { Repository } from './repository.js';
export { NamedPortMultiMap, type NamedPortListener } from './named-port-map.js';
export { PolicyStore, policyStoreFile, POLICY_STORE_FILE, type StoredPolicy } from './store.js';
export { PolicyRestorer } from './restore.js';
export { SelectorCache } from './selector-cache.js';
export { ENTITIES, ENTITY_NAMES } from './entities.js';
export { distill, resolveDenies, resolveEgressNamedPorts, resolveNamedPorts, type EgressPortResolver } from './distill.js';
export { protocolNumber } from './trace.js';
export { POD_NAMESPACE_KEY, resourceLabels, compileRule } from './compile.js';
export { isPortName } from './port-rules.js';
export { parsePolicyText, validateSchema, type RuleInput, type RuleSource } from './parse.js';
export type { CompiledRule } from './rule.js';
export { cidrIPCacheCell, cidrOfIdentity } from './cidr-ipcache.js';
export * from './cell.js';
export { labelSelector as labelSelectorSchema } from './schema.js';
