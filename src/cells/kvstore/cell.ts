/** The kvstore cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { ShutdownerToken } from '../../hive/shutdowner.js';
import { StatusSectionsToken, type StatusSection } from '../agent-status/index.js';
import { IdentityBackendChoicesToken, IdentityConfigToken, type IdentityBackendChoice } from '../identity/index.js';
import { EtcdKVStore } from './client.js';
import { EtcdIdentityBackend } from './identity-backend.js';
import { KVIdentityGC } from './identity-gc.js';
import { KVStoreConfigToken, kvstoreConfigSchema } from './config.js';
import { KVStoreToken, type KVStore } from './types.js';

/** How often the endpoints are probed for the status and the health tree. */
export const KVSTORE_PROBE_INTERVAL_MS = 2000;

/** What the kvstore is built from. */
const kvstoreDeps = { cfg: KVStoreConfigToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken, shutdown: ShutdownerToken } as const;

/** Builds the kvstore: probed at start and on a timer, the session lease revoked and clients closed at stop. */
function newKVStore({ cfg, lc, jobs, health, log, shutdown }: DepsValues<typeof kvstoreDeps>): EtcdKVStore {
  const kv = new EtcdKVStore(cfg, health, log);
  if (!kv.enabled) {
    health.ok('disabled: a single node (no --kvstore)');
    return kv;
  }
  shutdown.stopping.addEventListener('abort', () => kv.halting(), { once: true });
  lc.append({
    name: 'kvstore',
    onStart: async () => {
      const s = await kv.probe();
      log.info({ state: s.state, msg: s.msg }, 'kvstore connected');
    },
    onStop: () => kv.close(),
  });
  jobs.timer('kvstore-probe', async () => {
    await kv.probe();
  }, KVSTORE_PROBE_INTERVAL_MS);
  return kv;
}

/** What the etcd identity backend is built from. */
const identityBackendDeps = { kv: KVStoreToken, cfg: IdentityConfigToken, jobs: JobsToken, log: LoggerToken } as const;

/**
 * With --kvstore=etcd: the etcd identity backend, and cluster-wide identity GC every
 * --identity-gc-interval (both made only when the identity cell chooses it).
 */
function newIdentityBackend({ kv, cfg, jobs, log }: DepsValues<typeof identityBackendDeps>): IdentityBackendChoice {
  if (!kv.enabled) return { mode: 'kvstore', create: undefined };
  return {
    mode: 'kvstore',
    create: () => {
      const gc = new KVIdentityGC(kv.etcd, log);
      jobs.timer('identity-gc-kvstore', async () => {
        await gc.run();
      }, cfg.identityGcInterval);
      return new EtcdIdentityBackend(kv, jobs, log);
    },
  };
}

/** The kvstore cell. */
export const kvstoreCell = module(
  'kvstore',
  'Cluster key-value store (etcd)',
  config(KVStoreConfigToken, kvstoreConfigSchema),
  provide(KVStoreToken, newKVStore, kvstoreDeps),
  provideInto(IdentityBackendChoicesToken, newIdentityBackend, identityBackendDeps),
  provideInto(StatusSectionsToken, (kv: KVStore): StatusSection => ({ key: 'kvstore', status: () => kv.status() }), KVStoreToken),
);
