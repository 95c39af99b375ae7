/** The identity cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { join } from 'node:path';
import { config, module, provide, type DepsValues } from '../../hive/cell.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { ShutdownerToken } from '../../hive/shutdowner.js';
import { StateDirConfigToken } from '../statedir/index.js';
import { LocalIdentityAllocator } from './allocator.js';
import { IdentityBackendChoicesToken, IdentityBackendToken, type IdentityBackend } from './backend.js';
import { IdentityConfigToken, identityConfigSchema } from './config.js';
import { EmbeddedBackend } from './embedded-backend.js';
import { IdentityAllocatorToken } from './types.js';

/** The label parser for IdentityAllocator.allocate (`parseLabels(['k8s:app=web'])`), and its inverse. */

/** The state file of the embedded backend. */
export function identityStateFile(stateDir: string): string {
  return join(stateDir, 'identities.json');
}

/** What the backend is chosen from. */
const backendDeps = { sd: StateDirConfigToken, choices: IdentityBackendChoicesToken } as const;

/** The backend: a cluster-wide one another cell contributed (the kvstore's), else the embedded file. */
function newBackend(d: DepsValues<typeof backendDeps>): IdentityBackend {
  return d.choices.find((c) => c.backend)?.backend ?? new EmbeddedBackend(identityStateFile(d.sd.stateDir));
}

/** What the allocator is built from. */
const allocatorDeps = {
  backend: IdentityBackendToken, cfg: IdentityConfigToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken, shutdown: ShutdownerToken,
} as const;

/**
 * Builds the allocator: loads the backend at start, runs GC on a timer, waits for writes at stop.
 * A cluster-wide backend's changes are followed by the observer job `backend-identities` from
 * construction on, handled inside the backend's `next` (the allocator takes them once loaded).
 */
function newAllocator({ backend, cfg, lc, jobs, log, shutdown }: DepsValues<typeof allocatorDeps>): LocalIdentityAllocator {
  const alloc = new LocalIdentityAllocator(backend, log, { timeoutMs: cfg.identityAllocationTimeout, stopping: shutdown.stopping });
  if (backend.events$) jobs.observer('backend-identities', backend.events$, (ev) => alloc.onBackendEvent(ev), { immediate: true, sync: true });
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
  provide(IdentityBackendToken, newBackend, backendDeps),
  provide(IdentityAllocatorToken, newAllocator, allocatorDeps),
);
