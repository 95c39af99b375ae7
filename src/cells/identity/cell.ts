/** The identity cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { join } from 'node:path';
import { config, module, provide } from '../../hive/cell.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { ShutdownerToken, type Shutdowner } from '../../hive/shutdowner.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { LocalIdentityAllocator } from './allocator.js';
import { IdentityBackendChoicesToken, IdentityBackendToken, type IdentityBackend, type IdentityBackendChoice } from './backend.js';
import { IdentityConfigToken, identityConfigSchema, type IdentityConfig } from './config.js';
import { EmbeddedBackend } from './embedded-backend.js';
import { IdentityAllocatorToken } from './types.js';

/** The label parser for IdentityAllocator.allocate (`parseLabels(['k8s:app=web'])`), and its inverse. */

/** The state file of the embedded backend. */
export function identityStateFile(stateDir: string): string {
  return join(stateDir, 'identities.json');
}

/** Builds the allocator: loads the backend at start, runs GC on a timer, waits for writes at stop. */
function newAllocator(backend: IdentityBackend, cfg: IdentityConfig, lc: Lifecycle, jobs: Jobs, log: Logger, shutdown: Shutdowner): LocalIdentityAllocator {
  const alloc = new LocalIdentityAllocator(backend, log, { timeoutMs: cfg.identityAllocationTimeout, stopping: shutdown.stopping });
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
  provide(
    IdentityBackendToken,
    (sd: StateDirConfig, choices: readonly IdentityBackendChoice[]) => choices.find((c) => c.backend)?.backend ?? new EmbeddedBackend(identityStateFile(sd.stateDir)),
    StateDirConfigToken, IdentityBackendChoicesToken,
  ),
  provide(IdentityAllocatorToken, newAllocator, IdentityBackendToken, IdentityConfigToken, LifecycleToken, JobsToken, LoggerToken, ShutdownerToken),
);
