/**
 * The identity cell (module `identity`): the IdentityAllocator with the embedded backend in
 * `<state-dir>/identities.json`, and a GC timer job (`--identity-gc-interval`).
 * Needs the statedir cell (StateDirConfigToken).
 */
import { join } from 'node:path';
import { config, module, provide } from '../../hive/cell.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { LocalIdentityAllocator } from './allocator.js';
import { IdentityBackendToken, type IdentityBackend } from './backend.js';
import { IdentityConfigToken, identityConfigSchema, type IdentityConfig } from './config.js';
import { EmbeddedBackend } from './embedded-backend.js';
import { IdentityAllocatorToken } from './types.js';

export * from './types.js';
export { IdentityBackendToken, type IdentityBackend, type StoredIdentity } from './backend.js';
export { EmbeddedBackend } from './embedded-backend.js';
export { LocalIdentityAllocator, IDENTITY_RANGE } from './allocator.js';
export { IdentityConfigToken, identityConfigSchema, type IdentityConfig } from './config.js';
export { IdentityError, type IdentityErrorCode } from './errors.js';
export { RESERVED, reservedIdentities, reservedFor, makeIdentity } from './reserved.js';
export { cidrLabel, cidrOfLabel } from './cidr.js';
/** The label parser for IdentityAllocator.allocate (`parseLabels(['k8s:app=web'])`), and its inverse. */
export { parseLabel, parseLabels, formatLabel, formatLabels, type Label } from '../../lib/labels.js';

/** The state file of the embedded backend. */
export function identityStateFile(stateDir: string): string {
  return join(stateDir, 'identities.json');
}

/** Builds the allocator: loads the backend at start, runs GC on a timer, waits for writes at stop. */
function newAllocator(backend: IdentityBackend, cfg: IdentityConfig, lc: Lifecycle, jobs: Jobs, log: Logger): LocalIdentityAllocator {
  const alloc = new LocalIdentityAllocator(backend, log);
  lc.append({
    name: 'identity-restore',
    onStart: () => alloc.load(),
    onStop: () => alloc.close(),
  });
  jobs.timer('identity-gc', async () => {
    await alloc.gc();
  }, cfg.identityGcInterval);
  return alloc;
}

/** The identity cell. */
export const identityCell = module(
  'identity',
  'Security identities',
  config(IdentityConfigToken, identityConfigSchema),
  provide(IdentityBackendToken, (sd: StateDirConfig) => new EmbeddedBackend(identityStateFile(sd.stateDir)), StateDirConfigToken),
  provide(IdentityAllocatorToken, newAllocator, IdentityBackendToken, IdentityConfigToken, LifecycleToken, JobsToken, LoggerToken),
);
