/** The endpoint cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, invoke, module, provide, providePrivate } from '../../hive/cell.js';
import { ControllerManagerToken, type ControllerManager } from '../../hive/controller/manager.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { LinkCheckerToken, type LinkChecker } from '../datapath/types.js';
import { DatapathToken, type Datapath } from '../../datapath/types.js';
import { IdentityAllocatorToken, type IdentityAllocator } from '../identity/types.js';
import { IPAMToken, type IPAM } from '../ipam/types.js';
import { PolicyRepositoryToken, PolicyRestoreToken, type PolicyRepository, type PolicyRestore } from '../policy/types.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { EndpointAPIManagerImpl } from './api-manager.js';
import { EndpointConfigToken, endpointConfigSchema, type EndpointConfig } from './config.js';
import { DefaultEndpointCreator, EndpointCreatorToken, type EndpointCreator } from './creator.js';
import { gcRound } from './gc.js';
import type { Endpoint } from './endpoint.js';
import { EndpointManagerImpl } from './manager.js';
import { Regenerator } from './regeneration.js';
import { EndpointRestorer } from './restore.js';
import { isTerminating } from './state.js';
import { EndpointStateStore } from './state-store.js';
import { EndpointAPIManagerToken, EndpointCreationHooksToken, EndpointManagerToken, PodLabelSourcesToken, type EndpointCreationHook, type PodLabelSource } from './types.js';

/** Token for the EndpointManager implementation (lookups by container, restore, conflict checks). */
export const EndpointManagerImplToken = token<EndpointManagerImpl>('EndpointManagerImpl');
/** Token for the endpoint state directory. */
export const EndpointStateStoreToken = token<EndpointStateStore>('EndpointStateStore');
/** Token for the restorer (`done` settles once restored endpoints were regenerated). */
export const EndpointRestorerToken = token<EndpointRestorer>('EndpointRestorer');
const RegeneratorToken = token<Regenerator>('EndpointRegenerator');

/** Everything the manager's lifecycle and jobs need. */
interface ManagerDeps {
  readonly regenerator: Regenerator;
  readonly datapath: Datapath;
  readonly cfg: EndpointConfig;
  readonly policy: PolicyRepository;
  readonly linkExists: LinkChecker;
  readonly lc: Lifecycle;
  readonly jobs: Jobs;
  readonly health: Health;
  readonly log: Logger;
}

/** Reports the module's health: degraded while any endpoint's last regeneration failed. */
function reportHealth(m: EndpointManagerImpl, regenerator: Regenerator, health: Health): void {
  const failing = new Map<number, string>();
  const update = (): void => {
    if (failing.size === 0) health.ok(`${m.size} endpoints`);
    else health.degraded(`${failing.size} of ${m.size} endpoints failed to regenerate: ${[...failing.entries()].slice(0, 5).map(([id, e]) => `${id}: ${e}`).join('; ')}`);
  };
  regenerator.outcomes$.subscribe((o) => {
    if (o.ok) failing.delete(o.endpointId);
    else failing.set(o.endpointId, o.error ?? 'failed');
    update();
  });
  m.created$.subscribe(update);
  m.restored$.subscribe(update);
  m.deleted$.subscribe((ep) => {
    failing.delete(ep.id);
    update();
  });
  update();
}

/** Builds the manager with its stop hook, its health and its GC, periodic and policy-change jobs. */
function newManager(d: ManagerDeps): EndpointManagerImpl {
  const m = new EndpointManagerImpl(d.regenerator, d.log);
  reportHealth(m, d.regenerator, d.health);
  d.lc.append({
    name: 'endpoint-manager',
    onStop: async () => {
      await Promise.all(m.list().map((ep) => ep.shutdown('agent stopping')));
      m.close();
    },
  });
  d.jobs.timer('endpoint-gc', async () => {
    await gcRound(m, d.linkExists, d.log);
  }, d.cfg.endpointGcInterval);
  d.jobs.timer('endpoint-periodic-regeneration', () => m.regenerateAll('periodic endpoint regeneration'), d.cfg.endpointRegenInterval);
  const programLost = (ep: Endpoint, why: string): void => {
    if (isTerminating(ep.storedState)) return;
    d.regenerator.programLost(ep, why);
    ep.regenerate('datapath program missing from its interface', 'rewrite+load').catch((err: Error) => {
      if (!ep.signal.aborted) d.log.warn({ endpointID: ep.id, err: err.message }, 'reloading a missing endpoint program failed');
    });
  };
  if (d.datapath.programsLost$) {
    d.jobs.observer('endpoint-programs-lost', d.datapath.programsLost$, (lost) => {
      const ep = m.lookup(String(lost.endpointId));
      if (ep) programLost(ep, lost.why);
    });
  }
  m.programCheck = async (ep) => {
    const why = await d.datapath.loader.checkAttached(ep.id);
    if (why) programLost(ep, why);
    return why;
  };
  d.jobs.observer('endpoint-policy-updates', d.policy.changes$, (change) => {
    const affected = m.withIdentities(change.affected);
    const skip = new Set(affected);
    for (const ep of m.list()) if (!skip.has(ep)) ep.bumpPolicyRevision(change.revision);
    for (const ep of affected) {
      ep.regenerate(`policy change (revision ${change.revision})`, 'no-rebuild').catch((err: Error) => {
        if (!ep.signal.aborted) d.log.warn({ endpointID: ep.id, err: err.message }, 'regeneration after a policy change failed');
      });
    }
  });
  return m;
}

/**
 * Builds the restorer and restores endpoints at start: after identities, IPAM and the datapath started (the regenerator needs IPAM; restore hands the datapath the restored endpoints), and after
 * the stored policy is back (it depends on PolicyRestoreToken, so the policy-restore hook comes
 * first, and it waits for `done` before restoring anything).
 */
function newRestorer(
  store: EndpointStateStore, m: EndpointManagerImpl, linkExists: LinkChecker, identities: IdentityAllocator, policy: PolicyRestore, datapath: Datapath, lc: Lifecycle, log: Logger,
): EndpointRestorer {
  const r = new EndpointRestorer(store, m, linkExists, identities, policy.done, datapath, log);
  lc.append({
    name: 'endpoint-restore',
    onStart: async () => {
      await r.restore();
    },
  });
  return r;
}

/** The endpoint cell. */
export const endpointCell = module(
  'endpoint',
  'Endpoints: creation, management, regeneration, restore',
  config(EndpointConfigToken, endpointConfigSchema),
  provide(EndpointStateStoreToken, (sd: StateDirConfig) => new EndpointStateStore(sd.stateDir), StateDirConfigToken),
  providePrivate(
    RegeneratorToken,
    (identities: IdentityAllocator, policy: PolicyRepository, datapath: Datapath, ipam: IPAM, store: EndpointStateStore, controllers: ControllerManager, log: Logger) =>
      new Regenerator({ identities, policy, datapath, ipam, store, controllers, log }),
    IdentityAllocatorToken, PolicyRepositoryToken, DatapathToken, IPAMToken, EndpointStateStoreToken, ControllerManagerToken, LoggerToken,
  ),
  provide(
    EndpointManagerImplToken,
    (regenerator: Regenerator, datapath: Datapath, cfg: EndpointConfig, policy: PolicyRepository, linkExists: LinkChecker, lc: Lifecycle, jobs: Jobs, health: Health, log: Logger) =>
      newManager({ regenerator, datapath, cfg, policy, linkExists, lc, jobs, health, log }),
    RegeneratorToken, DatapathToken, EndpointConfigToken, PolicyRepositoryToken, LinkCheckerToken, LifecycleToken, JobsToken, HealthToken, LoggerToken,
  ),
  provide(
    EndpointRestorerToken, newRestorer,
    EndpointStateStoreToken, EndpointManagerImplToken, LinkCheckerToken, IdentityAllocatorToken, PolicyRestoreToken, DatapathToken, LifecycleToken, LoggerToken,
  ),
  provide(EndpointManagerToken, (m: EndpointManagerImpl) => m, EndpointManagerImplToken),
  provide(EndpointCreatorToken, DefaultEndpointCreator),
  provide(
    EndpointAPIManagerToken,
    (creator: EndpointCreator, m: EndpointManagerImpl, log: Logger, r: EndpointRestorer, pl: readonly PodLabelSource[], hooks: readonly EndpointCreationHook[]) =>
      new EndpointAPIManagerImpl(creator, m, log, r.exposed, pl, hooks),
    EndpointCreatorToken, EndpointManagerImplToken, LoggerToken, EndpointRestorerToken, PodLabelSourcesToken, EndpointCreationHooksToken,
  ),
  invoke('endpoint-restore', (_r: EndpointRestorer) => undefined, EndpointRestorerToken),
);
