/**
 * The endpoint cell (module `endpoint`): EndpointCreator, EndpointManager and EndpointAPIManager,
 * endpoint regeneration, the state directory with restore at start, the GC timer
 * (`--endpoint-gc-interval`), periodic regeneration (`--endpoint-regen-interval`) and policy-change
 * regeneration of the affected endpoints. Needs: statedir, identity, policy, IPAM and datapath cells
 * (StateDirConfigToken, IdentityAllocatorToken, PolicyRepositoryToken, PolicyRestoreToken, IPAMToken,
 * DatapathToken, LinkCheckerToken).
 */
export * from './types.js';
export * from './model.js';
export { EndpointError, type EndpointErrorCode } from './errors.js';
export { Endpoint, type EndpointOwner, type EndpointSnapshot, type EndpointPolicyStatus } from './endpoint.js';
export { EndpointCreatorToken, DefaultEndpointCreator, type EndpointCreator, changeRequestSchema } from './creator.js';
export { EndpointManagerImpl, type EndpointRuntime, type RemoveOptions } from './manager.js';
export { EndpointAPIManagerImpl, NAMESPACE_LABEL } from './api-manager.js';
export { EndpointConfigToken, endpointConfigSchema, type EndpointConfig } from './config.js';
export { EndpointStateStore, EP_CONFIG_JSON, EP_CONFIG_H, type StoredEndpoint } from './state-store.js';
export { EndpointRestorer, type RestoreSummary } from './restore.js';
export { Regenerator, datapathConfigOf, configHash, RECOVERY_REASON, type RegenerationOutcome } from './regeneration.js';
export { gcRound, type GCResult } from './gc.js';
export { parseEndpointId, type EndpointIdPrefix } from './endpoint-id.js';
export { MIN_ENDPOINT_ID, MAX_ENDPOINT_ID } from './id-allocator.js';
export { ENDPOINT_OPTIONS, DEFAULT_OPTIONS, IPAM_SOURCE_PROPERTY, CNI_NETWORK_PROPERTY, addressesFromNodePool, type EndpointSpec } from './spec.js';
export { STORED_STATES, TRANSITIONS, BUILDER_TRANSITIONS, canTransition, canBuilderTransition, type StoredState } from './state.js';
export * from './cell.js';
