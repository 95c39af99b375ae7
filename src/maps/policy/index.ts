/** The per-endpoint policy map (Cilium's pkg/maps/policymap): key semantics, layout, open and sync. */
export * from './key.js';
export { OBJECT_POLICY_MAP, POLICY_MAP_SPEC, policyKeyCodec, policyValueCodec } from './layout.js';
export { openPolicyMap, policyMapPath, removePolicyMap, syncPolicyMap, type PolicyMap, type PolicySyncResult } from './map.js';
export { policyContentId } from './content.js';
