/**
 * The identity cell (module `identity`): the IdentityAllocator with the embedded backend in
 * `<state-dir>/identities.json`, and a GC timer job (`--identity-gc-interval`).
 * Needs the statedir cell (StateDirConfigToken).
 */
export * from './types.js';
export { IdentityBackendToken, IdentityBackendChoicesToken, type IdentityBackend, type IdentityBackendChoice, type IdentityBackendEvent, type StoredIdentity } from './backend.js';
export { EmbeddedBackend } from './embedded-backend.js';
export { LocalIdentityAllocator, IDENTITY_RANGE } from './allocator.js';
export { IdentityConfigToken, identityConfigSchema, type IdentityConfig } from './config.js';
export { IdentityError, type IdentityErrorCode } from './errors.js';
export { RESERVED, reservedIdentities, reservedFor, makeIdentity } from './reserved.js';
export { cidrLabel, cidrOfLabel } from './cidr.js';
export { FakeIdentityAllocator } from './fake.js';
export { parseLabel, parseLabels, formatLabel, formatLabels, type Label } from '../../lib/labels.js';
export * from './cell.js';
