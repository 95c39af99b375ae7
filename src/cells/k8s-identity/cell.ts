/** The k8s-identity cell's wiring: the CiliumIdentity backend it offers the identity cell, its watch, the GC and its Lease (index.ts is its public face). */
import { config, module, provideInto, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { IdentityBackendChoicesToken, IdentityConfigToken, type IdentityBackendChoice } from '../identity/index.js';
import { K8sClientToken, K8sConfigToken, newResource } from '../k8s/index.js';
import { CepApi } from '../k8s-endpoint-sync/index.js';
import { StateDirConfigToken } from '../statedir/index.js';
import { IdentityApi, type CiliumIdentity } from './api.js';
import { CrdIdentityBackend } from './backend.js';
import { CrdIdentityConfigToken, crdIdentityConfigSchema } from './config.js';
import { CrdIdentityGC } from './gc.js';
import { HeldJournal, journalFile } from './journal.js';
import { electionTiming, LeaseElector } from './lease.js';

/** The name of the identity GC's Lease. */
export const GC_LEASE_NAME = 'cellium-identity-gc';

const choiceDeps = {
  client: K8sClientToken, k8s: K8sConfigToken, idcfg: IdentityConfigToken, cfg: CrdIdentityConfigToken, sd: StateDirConfigToken,
  lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken,
} as const;

/**
 * With Kubernetes: the CiliumIdentity backend (made only when the identity cell chooses it), with
 * the observer job `ciliumidentities` feeding it the watch, the job `identity-gc-lease` running
 * the election every retry period, and `identity-gc-crd` running a GC round every
 * --identity-gc-interval while this agent holds the Lease; the Lease is given up at stop.
 */
function newChoice(d: DepsValues<typeof choiceDeps>): IdentityBackendChoice {
  if (!d.client.enabled) {
    d.health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
    return { mode: 'crd', create: undefined };
  }
  return {
    mode: 'crd',
    create: () => {
      const api = new IdentityApi(d.client);
      const resource = newResource<CiliumIdentity>(d.client, d.lc, d.health, d.log, 'ciliumidentities', {
        path: '/apis/cilium.io/v2/ciliumidentities', minBackoffMs: 500, maxBackoffMs: 30_000,
      });
      const backend = new CrdIdentityBackend(api, resource, d.log, new HeldJournal(journalFile(d.sd.stateDir), (err) => d.log.warn({ err: err.message }, 'could not write the journal of held identities; written again with the next change')));
      d.jobs.observer('ciliumidentities', resource.events(), (ev) => backend.onEvent(ev), { immediate: true, sync: true });
      const timing = electionTiming(d.cfg.identityGcLeaseDuration);
      const elector = new LeaseElector(api, d.cfg.identityGcLeaseNamespace, GC_LEASE_NAME, d.k8s.k8sNodeName, timing, d.log);
      const h = d.health.scope('identity-gc');
      d.jobs.timer('identity-gc-lease', async ({ signal }) => {
        const leading = await elector.step(signal);
        h.ok(leading ? `leader: runs the identity GC (Lease ${elector.namespace}/${GC_LEASE_NAME})` : 'follower: another agent runs the identity GC');
      }, timing.retryMs);
      const ceps = new CepApi(d.client);
      const gc = new CrdIdentityGC({
        api, graceMs: d.cfg.identityHeartbeatTimeout, holder: d.k8s.k8sNodeName, log: d.log,
        identities: async () => (await resource.store()).list(),
        endpoints: (signal) => ceps.list(signal),
        isLeader: () => elector.isLeader(),
      });
      d.jobs.timer('identity-gc-crd', async ({ signal }) => {
        await gc.round(signal);
      }, d.idcfg.identityGcInterval);
      d.lc.append({ name: 'identity-gc-lease', onStop: () => elector.release() });
      return backend;
    },
  };
}

/** The k8s-identity cell. */
export const k8sIdentityCell = module(
  'k8s-identity',
  'Identities as CiliumIdentity objects (--identity-allocation-mode=crd) and their GC by one elected agent',
  config(CrdIdentityConfigToken, crdIdentityConfigSchema),
  provideInto(IdentityBackendChoicesToken, newChoice, choiceDeps),
);
