/**
 * The k8s-identity cell (module `k8s-identity`): identities as CiliumIdentity objects, Cilium's
 * --identity-allocation-mode=crd, offered to the identity cell with Kubernetes; unused ones
 * garbage-collected by the one agent holding the Lease kube-system/cellium-identity-gc.
 */
export { IdentityApi, HEARTBEAT_ANNOTATION, IDENTITY_REQUEST_TIMEOUT_MS, type CiliumIdentity, type Lease } from './api.js';
export { CrdIdentityBackend, type IdentitySource } from './backend.js';
export { CrdIdentityGC, type GCDeps, type GCRound } from './gc.js';
export { LeaseElector, electionTiming, type ElectionTiming } from './lease.js';
export { identityObject, labelsOf, idOf } from './objects.js';
export { HeldJournal, journalFile, type HeldIdentity } from './journal.js';
export { CrdIdentityConfigToken, crdIdentityConfigSchema, type CrdIdentityConfig } from './config.js';
export { IdentityRequestError } from './errors.js';
export { k8sIdentityCell, GC_LEASE_NAME } from './cell.js';
