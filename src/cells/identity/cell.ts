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
import { kvstoreModeUnavailable } from './errors.js';
import { EmbeddedBackend } from './embedded-backend.js';
import { IdentityAllocatorToken } from './types.js';

/** The label parser for IdentityAllocator.allocate (`parseLabels(['k8s:app=web'])`), and its inverse. */

/** The state file of the embedded backend. */
export function identityStateFile(stateDir: string): string {
  return join(stateDir, 'identities.json');
}

/** What the backend is chosen from. */
const backendDeps = { sd: StateDirConfigToken, cfg: IdentityConfigToken, choices: IdentityBackendChoicesToken, log: LoggerToken } as const;

/**
 * The backend: the cluster-wide one of --identity-allocation-mode another cell offers (crd: the
 * k8s-identity cell's, kvstore: the kvstore cell's), else (crd without Kubernetes) another one
 * offered, else the embedded file. kvstore asked for and not offered is refused at start.
 */
function newBackend(d: DepsValues<typeof backendDeps>): IdentityBackend {
  const offered = d.choices.filter((c) => c.create);
  const chosen = offered.find((c) => c.mode === d.cfg.identityAllocationMode) ?? (d.cfg.identityAllocationMode === 'crd' ? offered[0] : undefined);
  if (!chosen && d.cfg.identityAllocationMode === 'kvstore') throw kvstoreModeUnavailable();
  const backend = chosen?.create?.() ?? new EmbeddedBackend(identityStateFile(d.sd.stateDir));
  d.log.info({ mode: d.cfg.identityAllocationMode, backend: backend.name }, 'identity backend chosen');
  return backend;
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
