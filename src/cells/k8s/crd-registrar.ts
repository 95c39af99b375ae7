/**
 * Registers the Cilium CRDs at start (Cilium's agent does the same unless --skip-crd-creation):
 * ensureCrds runs in the background, so an apiserver that is down does not hold the agent's start;
 * it is retried with backoff (500 ms doubling to 30 s) until it succeeds, each failure in the
 * health node `crds` (degraded, naming the CRD, verb and fix) and logged once per kind of error.
 * The CNP/CCNP resources list on their own and sync once their CRDs are Established.
 */
import type { Health } from '../../hive/health.js';
import type { Lifecycle } from '../../hive/lifecycle.js';
import type { Logger } from '../../hive/logger.js';
import type { K8sClient } from './client.js';
import type { K8sConfig } from './config.js';
import { ensureCrds, type CrdOutcome, type EnsureCrdsOptions } from './crds.js';
import { Sleeper } from './sleeper.js';

/** What the registrar needs. */
export interface CrdRegistrarDeps {
  readonly client: K8sClient;
  readonly cfg: K8sConfig;
  readonly lc: Lifecycle;
  readonly health: Health;
  readonly log: Logger;
}

/**
 * The CRD registration: `registered` resolves once every CRD is registered (at once when Kubernetes
 * is disabled or with --skip-crd-creation; never when the agent stops first). A cell whose start
 * hook writes Cilium objects depends on it so that the registration's hook starts before its own.
 */
export interface CrdRegistration {
  readonly registered: Promise<void>;
}

/** Adds the CRD registration to the lifecycle (nothing when Kubernetes is disabled or --skip-crd-creation). */
export function registerCrds(d: CrdRegistrarDeps, opts: EnsureCrdsOptions = {}): CrdRegistration {
  if (!d.client.enabled) {
    d.health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
    return { registered: Promise.resolve() };
  }
  const h = d.health.scope('crds');
  if (d.cfg.skipCrdCreation) {
    h.ok('not registered (--skip-crd-creation): installed by the operator');
    return { registered: Promise.resolve() };
  }
  let done!: () => void;
  const registered = new Promise<void>((resolve) => (done = resolve));
  const sleeper = new Sleeper();
  const abort = new AbortController();
  let stopped = false;
  let loop: Promise<void> | undefined;
  const run = async (): Promise<void> => {
    let lastMsg = '';
    for (let failures = 0; !stopped; failures++) {
      try {
        const outcome: CrdOutcome[] = await ensureCrds(d.client, d.log, { ...opts, signal: abort.signal });
        h.ok(`registered: ${outcome.map((o) => `${o.name} ${o.action}`).join(', ')}`);
        d.log.info({ crds: outcome }, 'Cilium CRDs registered');
        done();
        return;
      } catch (err) {
        if (stopped) return;
        const msg = (err as Error).message;
        h.degraded(`retrying: ${msg}`);
        if (msg !== lastMsg) d.log.warn({ err }, 'registering the Cilium CRDs failed; retrying with backoff');
        lastMsg = msg;
        await sleeper.sleep(Math.min(30_000, 500 * 2 ** Math.min(failures, 10)));
      }
    }
  };
  d.lc.append({
    name: 'k8s-crds',
    onStart: () => {
      h.ok('registering');
      loop = run();
    },
    onStop: async () => {
      stopped = true;
      abort.abort();
      sleeper.interrupt();
      await loop;
    },
  });
  return { registered };
}
