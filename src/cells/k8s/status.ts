/**
 * The `kubernetes` line of `cellium status` (Cilium's K8sStatus): the apiserver's version, which
 * resources are synced, and the last error. The version is read at start and retried with backoff
 * while the apiserver does not answer (the agent starts regardless), then refreshed every
 * VERSION_REFRESH_MS.
 */
import type { Health } from '../../hive/health.js';
import type { Lifecycle } from '../../hive/lifecycle.js';
import type { Logger } from '../../hive/logger.js';
import type { K8sClient } from './client.js';
import { getJson } from './listwatch.js';
import type { K8sObject, Resource } from './resource.js';
import { Sleeper } from './sleeper.js';

/** How often a known version is read again. */
export const VERSION_REFRESH_MS = 300_000;

/** The K8sStatus of the StatusResponse. */
export interface K8sStatusModel {
  readonly state: 'Ok' | 'Warning' | 'Failure' | 'Disabled';
  readonly msg: string;
  readonly 'k8s-api-versions'?: string[];
}

/** A watched resource as the status sees it. */
export interface StatusResource {
  readonly name: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly resource: Resource<K8sObject> | undefined;
}

/** Tracks the apiserver's version and summarizes the resources. */
export class K8sStatusReporter {
  private version?: string;
  private versionError?: string;
  private stopped = false;
  private readonly sleeper = new Sleeper();
  private loop?: Promise<void>;

  constructor(
    private readonly client: K8sClient,
    private readonly resources: readonly StatusResource[],
    private readonly health: Health,
    private readonly log: Logger,
  ) {}

  /** Adds the version probe to the lifecycle (nothing when disabled). */
  register(lc: Lifecycle): void {
    if (!this.client.enabled) return;
    lc.append({
      name: 'k8s-version',
      onStart: () => {
        this.loop = this.probeLoop();
      },
      onStop: async () => {
        this.stopped = true;
        this.sleeper.interrupt();
        await this.loop;
      },
    });
  }

  /** The K8sStatus: Disabled, Ok (version known, all synced) or Warning naming what is not. */
  status(): K8sStatusModel {
    if (!this.client.enabled) return { state: 'Disabled', msg: 'no --k8s-kubeconfig-path and not in a pod' };
    const live = this.resources.filter((r) => r.resource);
    const notSynced = live.filter((r) => !r.resource!.status().synced);
    const errors = live.flatMap((r) => {
      const st = r.resource!.status();
      return st.lastError && !st.synced ? [`${r.name}: ${st.lastError}`] : [];
    });
    const lastError = this.versionError ? `version: ${this.versionError}` : errors[errors.length - 1];
    const parts = [
      `${this.version ?? 'version unknown'} at ${this.client.server}`,
      `${live.length - notSynced.length}/${live.length} resources synced`,
      ...(notSynced.length ? [`not synced: ${notSynced.map((r) => r.name).join(', ')}`] : []),
      ...(lastError ? [`last error: ${lastError}`] : []),
    ];
    const ok = this.version !== undefined && !this.versionError && notSynced.length === 0;
    return {
      state: ok ? 'Ok' : 'Warning',
      msg: parts.join('; '),
      'k8s-api-versions': live.map((r) => `${r.apiVersion}::${r.kind}${r.resource!.status().synced ? '' : ' (not synced)'}`),
    };
  }

  /** Reads /version until it answers (backoff 500 ms doubling to 30 s), then every VERSION_REFRESH_MS. */
  private async probeLoop(): Promise<void> {
    const h = this.health.scope('apiserver');
    let failures = 0;
    while (!this.stopped) {
      try {
        const v = await getJson<{ gitVersion?: string }>(this.client.kubeConfig(), '/version', {}, 10_000);
        this.version = v.gitVersion ?? 'unknown';
        this.versionError = undefined;
        failures = 0;
        h.ok(`${this.version} at ${this.client.server}`);
        await this.sleep(VERSION_REFRESH_MS);
      } catch (err) {
        if (this.stopped) return;
        this.versionError = (err as Error).message;
        h.degraded(`unreachable: ${this.versionError}`, err as Error);
        if (failures === 0) this.log.warn({ err, server: this.client.server }, 'kubernetes apiserver: version not readable; retrying');
        await this.sleep(Math.min(30_000, 500 * 2 ** Math.min(failures++, 10)));
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return this.stopped ? Promise.resolve() : this.sleeper.sleep(ms);
  }
}
