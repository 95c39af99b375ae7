/**
 * Endpoint regeneration (Cilium's regenerateBPF): identity from labels, policy distilled for that
 * identity into the endpoint's policy map, lxc and ipcache entries, the program reloaded when the
 * level is rewrite+load (a request is promoted when the hash of the datapath configuration
 * changed) while the maps are flushed and `<id>_next` is written, then `<id>_next` swapped in as
 * the state directory and the endpoint made ready. A no-rebuild run whose program is no longer
 * attached (taken off behind the agent's back) is promoted to rewrite+load, which re-attaches it,
 * and the endpoint's health shows it until then. A failure removes `<id>_next`, marks the
 * endpoint's health and schedules a retry controller (`endpoint-<id>-regeneration-recovery`), as
 * Cilium does.
 */
import { hostCidr } from '../../lib/addr.js';
import { createHash } from 'node:crypto';
import { Subject } from 'rxjs';
import type { ControllerManager, ControllerStatus, Logger } from '../../hive/index.js';
import { parseLabels } from '../../lib/labels.js';
import type { Datapath, EndpointDatapathConfig, LxcEntry } from '../../datapath/types.js';
import type { IdentityAllocator } from '../identity/types.js';
import type { IPAM } from '../ipam/types.js';
import type { NamedPortMap, PolicyRepository } from '../policy/types.js';
import { canonicalJSON } from './canonical-json.js';
import type { Endpoint } from './endpoint.js';
import { EndpointError, hostAddressTaken } from './errors.js';
import type { RegenerationRequest } from './event-queue.js';
import type { EndpointSpec } from './spec.js';
import { claimEndpointIPs, releaseEndpointIPs } from './ip-claims.js';
import type { EndpointRuntime, RemoveOptions } from './manager.js';
import type { EndpointStateStore } from './state-store.js';

/** The owner key of a local endpoint in the named-port map. */
export function endpointOwner(id: number): string {
  return `endpoint:${id}`;
}

/** An endpoint's addresses, as the named-port map holds them (ipBlocks select by them). */
export function endpointAddresses(ep: { readonly ipv4?: string; readonly ipv6?: string }): string[] {
  return [ep.ipv4, ep.ipv6].filter((ip): ip is string => !!ip);
}

/** The reason the recovery controller regenerates with. */
export const RECOVERY_REASON = 'retry after failed regeneration';

/** What regeneration works with. */
export interface RegeneratorDeps {
  readonly identities: IdentityAllocator;
  readonly policy: PolicyRepository;
  /** The node's named-port map: each build records the endpoint's identity and named ports there. */
  readonly namedPorts: NamedPortMap;
  readonly datapath: Datapath;
  readonly ipam: IPAM;
  readonly store: EndpointStateStore;
  readonly controllers: ControllerManager;
  readonly log: Logger;
  /** Base of the recovery controller's retry backoff (default 1 s). */
  readonly retryBaseMs?: number;
}

/** The datapath configuration of an endpoint (what its program is built with). */
export function datapathConfigOf(ep: Endpoint): EndpointDatapathConfig {
  const s = ep.spec;
  return {
    id: ep.id,
    identity: ep.identity ?? 0,
    ...(s.ipv4 ? { ipv4: s.ipv4 } : {}),
    ...(s.ipv6 ? { ipv6: s.ipv6 } : {}),
    ifName: s.ifName,
    ifIndex: s.ifIndex,
    mac: s.mac,
    hostMac: s.hostMac,
    options: { ...ep.options },
  };
}

/** A stable hash of a datapath configuration. */
export function configHash(cfg: EndpointDatapathConfig): string {
  return createHash('sha256').update(canonicalJSON(cfg)).digest('hex').slice(0, 16);
}

/** How one regeneration ended (aborted ones, of deleted endpoints, are not reported). */
export interface RegenerationOutcome {
  readonly endpointId: number;
  readonly ok: boolean;
  readonly level?: string;
  readonly error?: string;
  readonly durationMs: number;
}

/** Runs regenerations and teardowns of endpoints. */
export class Regenerator implements EndpointRuntime {
  private readonly recovering = new Set<number>();
  private readonly outcomesSubject = new Subject<RegenerationOutcome>();
  /** Emits how every regeneration ended (module health, metrics). */
  readonly outcomes$ = this.outcomesSubject.asObservable();

  /** Per endpoint, its configuration's hash and what it was computed from (see hashOf). */
  private readonly hashes = new WeakMap<Endpoint, { readonly id: number; readonly spec: EndpointSpec; readonly identity?: number; readonly options: string; readonly hash: string }>();

  constructor(private readonly d: RegeneratorDeps) {}

  /**
   * configHash(cfg), computed again only when something datapathConfigOf reads changed: the ID, the
   * spec (replaced whole, never changed in place), the identity or the options (a policy-only
   * regeneration hashes nothing).
   */
  private hashOf(ep: Endpoint, cfg: EndpointDatapathConfig): string {
    const options = JSON.stringify(ep.options);
    const h = this.hashes.get(ep);
    if (h && h.id === ep.id && h.spec === ep.spec && h.identity === ep.identity && h.options === options) return h.hash;
    const hash = configHash(cfg);
    this.hashes.set(ep, { id: ep.id, spec: ep.spec, identity: ep.identity, options, hash });
    return hash;
  }

  /**
   * See EndpointOwner. Only this endpoint's controllers (its regeneration recovery, the
   * CiliumEndpoint sync, ...) have their status built: the model is made twice per creation, and
   * building and sorting every controller of the agent each time cost the most of it.
   */
  controllers(ep: Endpoint): readonly ControllerStatus[] {
    return this.d.controllers.statuses(`endpoint-${ep.id}-`);
  }

  /** See EndpointOwner. */
  async regenerate(ep: Endpoint, req: RegenerationRequest, signal: AbortSignal): Promise<void> {
    const reasons = req.reasons.join(', ');
    const began = performance.now();
    try {
      signal.throwIfAborted();
      if (ep.identityStale()) await this.resolveIdentity(ep, signal);
      if (ep.storedState === 'ready') ep.setState('waiting-to-regenerate', `Triggering endpoint regeneration due to ${reasons}`);
      if (!ep.builderSetState('regenerating', `Regenerating endpoint: ${reasons}`)) {
        throw new EndpointError('failed', `endpoint ${ep.id} cannot be regenerated in state ${ep.storedState}`);
      }
      const level = await this.build(ep, req, signal);
      ep.setHealth('bpf', 'OK');
      ep.setHealth('policy', 'OK');
      ep.recordRegeneration();
      ep.builderSetState('ready', 'Completed endpoint regeneration with no pending regeneration requests');
      ep.logStatus('ok', `Successfully regenerated endpoint program (${level}) due to ${reasons}`);
      const durationMs = performance.now() - began;
      this.d.log.debug({ endpointID: ep.id, level, reasons, durationMs: Math.round(durationMs) }, 'endpoint regenerated');
      this.outcomesSubject.next({ endpointId: ep.id, ok: true, level, durationMs });
    } catch (err) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : err;
      const msg = (err as Error).message;
      ep.setHealth('bpf', 'Failure');
      ep.logStatus('failed', `Error regenerating endpoint: ${msg}`);
      if (ep.storedState === 'regenerating') ep.setState('waiting-to-regenerate', 'Regeneration failed; a retry is scheduled');
      this.d.log.warn({ endpointID: ep.id, reasons, err: msg }, 'endpoint regeneration failed');
      this.outcomesSubject.next({ endpointId: ep.id, ok: false, error: msg, durationMs: performance.now() - began });
      this.scheduleRecovery(ep, req);
      throw err instanceof EndpointError ? err : new EndpointError('failed', `regeneration of endpoint ${ep.id} failed: ${msg}`);
    }
  }

  /** Identity from labels: allocate the new one, then release the old one. */
  private async resolveIdentity(ep: Endpoint, signal: AbortSignal): Promise<void> {
    if (ep.storedState === 'ready') ep.setState('waiting-for-identity', 'Triggering identity resolution due to updated identity labels');
    const { identity } = await this.d.identities.allocate(parseLabels(ep.identityLabels()));
    if (signal.aborted) {
      await this.d.identities.release(identity.id);
      signal.throwIfAborted();
    }
    const old = ep.securityIdentity;
    ep.setIdentity(identity);
    if (old) await this.d.identities.release(old.id);
    if (old?.id !== identity.id) ep.logStatus('ok', `Identity of endpoint is ${identity.id} (was ${old?.id ?? 'none'})`);
    if (ep.storedState === 'waiting-for-identity') ep.setState('ready', 'Set identity for this endpoint');
  }

  /** Policy, maps, program, flush, state directory; returns the level actually used. */
  private async build(ep: Endpoint, req: RegenerationRequest, signal: AbortSignal): Promise<string> {
    const { maps, loader } = this.d.datapath;
    for (const ip of [ep.ipv4, ep.ipv6]) if (ip && (await this.d.datapath.isHostAddress?.(ip))) throw hostAddressTaken(ip);
    const identity = ep.securityIdentity!;
    // other endpoints' egress names resolve against this one's ports, ipBlocks against its addresses (a change recomputes them)
    this.d.namedPorts.upsert(endpointOwner(ep.id), identity.id, ep.namedPorts, endpointAddresses(ep));
    const resolved = this.d.policy.resolve(identity, ep.namedPorts);
    const { entries, ...summary } = resolved;
    // the result holds for the repository as it is now: a cached one carries the revision it was
    // distilled at, older when later changes did not touch this identity's rules (and the bump of
    // such a change, made while this build ran, must not be lost)
    const revision = Math.max(resolved.revision, this.d.policy.revision);
    ep.recordDesiredPolicy({ ...summary, revision, identity: identity.id });
    const cfg = datapathConfigOf(ep);
    const hash = this.hashOf(ep, cfg);
    let loadedHash = ep.datapathHash;
    if (loadedHash === undefined && ep.restoredDatapathHash === hash && (await loader.isLoaded(cfg))) loadedHash = hash;
    let level = req.level === 'rewrite+load' || loadedHash !== hash ? 'rewrite+load' : 'no-rebuild';
    if (level === 'no-rebuild') {
      // the program must still be where it was attached: one taken off behind the agent's back is reloaded
      const lost = await loader.checkAttached(ep.id);
      if (lost) {
        this.programLost(ep, lost);
        level = 'rewrite+load';
      }
    }
    let writeState = true;
    try {
      // the program load starts first (its verifier runs on a worker meanwhile); the state
      // directory and the map writes proceed at the same time; all must succeed
      const loading = level === 'rewrite+load' ? loader.reloadEndpoint(cfg, signal) : undefined;
      loading?.catch(() => undefined); // settled below; a throw before that must not leave it unhandled
      // the node's "rules existed" before any map holds them (restore's policyStoreMissing; written once)
      this.d.store.markRulesRealized(revision);
      maps.setPolicy(ep.id, entries);
      const lxc: LxcEntry[] = [ep.ipv4, ep.ipv6].filter((ip): ip is string => !!ip).map((ip) => ({
        ip, endpointId: ep.id, ifIndex: ep.spec.ifIndex, identity: identity.id, mac: ep.spec.mac,
      }));
      maps.setEndpoint(ep.id, lxc);
      for (const e of lxc) maps.upsertIPCache({ cidr: hostCidr(e.ip), identity: identity.id });
      const built = { datapathHash: hash, policyRevision: revision };
      // a policy-only change (no rebuild, the same snapshot but the revision): the committed directory still holds it
      writeState = level === 'rewrite+load' || !this.d.store.holds(ep, built);
      const [prepared, loaded, flushed] = await Promise.allSettled([
        writeState ? this.d.store.prepare(ep, cfg, built) : undefined,
        loading,
        maps.flush(signal, ep.id),
      ]);
      for (const r of [prepared, loaded, flushed]) if (r.status === 'rejected') throw r.reason;
      const failures = (flushed as PromiseFulfilledResult<readonly string[]>).value;
      if (failures.length) throw new EndpointError('failed', `datapath map writes failed: ${failures.join('; ')}`);
      signal.throwIfAborted();
      if (writeState) await this.d.store.commit(ep.id);
      // recorded once nothing is awaited any more: a policy change that bumps the desired revision
      // while the commit runs (the endpoint is still regenerating) is realized with this build
      ep.recordBuild(hash);
    } catch (err) {
      if (writeState) await this.d.store.discard(ep.id).catch(() => undefined);
      throw err;
    }
    return level;
  }

  /**
   * Records that an endpoint's program is gone from its interface (found by a regeneration or the
   * datapath's periodic check): its datapath health fails until a reload puts the program back.
   */
  programLost(ep: Endpoint, why: string): void {
    ep.setHealth('bpf', 'Failure');
    ep.logStatus('failed', `Datapath program missing: ${why}; reloading it`);
    this.d.log.warn({ endpointID: ep.id, ifName: ep.spec.ifName, why }, 'endpoint program missing from its interface; reloading it');
  }

  private scheduleRecovery(ep: Endpoint, req: RegenerationRequest): void {
    const name = `endpoint-${ep.id}-regeneration-recovery`;
    if (this.recovering.has(ep.id)) {
      if (!req.reasons.includes(RECOVERY_REASON)) this.d.controllers.triggerController(name);
      return;
    }
    this.recovering.add(ep.id);
    this.d.controllers.updateController(name, {
      doFunc: () => ep.regenerate(RECOVERY_REASON, req.level),
      errorRetryBaseMs: this.d.retryBaseMs ?? 1000,
    });
  }

  /** See EndpointRuntime: the endpoint's addresses recorded with IPAM under `id`. */
  claimIPs(ep: Endpoint, id: number): void {
    claimEndpointIPs(this.d.ipam, ep, id);
  }

  /** See EndpointRuntime: datapath state, controllers, identity, state directory, IPs. */
  async cleanup(ep: Endpoint, opts: RemoveOptions): Promise<void> {
    const errors: string[] = [];
    const step = async (what: string, fn: () => Promise<unknown> | unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        errors.push(`${what}: ${(err as Error).message}`);
      }
    };
    if (this.recovering.delete(ep.id)) await step('controllers', () => this.d.controllers.removeController(`endpoint-${ep.id}-regeneration-recovery`));
    const { maps, loader } = this.d.datapath;
    await step('program', () => loader.unloadEndpoint(ep.id, ep.spec.ifName));
    await step('maps', async () => {
      maps.deletePolicy(ep.id);
      maps.deleteEndpoint(ep.id);
      for (const ip of [ep.ipv4, ep.ipv6]) if (ip) maps.deleteIPCache(hostCidr(ip));
      const failures = await maps.flush(undefined, ep.id);
      if (failures.length) throw new Error(failures.join('; '));
    });
    const identity = ep.securityIdentity;
    if (identity) {
      ep.setIdentity(undefined);
      await step('identity', () => this.d.identities.release(identity.id));
    }
    await step('state directory', () => this.d.store.remove(ep.id));
    await step('IPs', () => releaseEndpointIPs(this.d.ipam, ep, opts.noIPRelease === true));
    if (errors.length) throw new Error(`cleanup of endpoint ${ep.id}: ${errors.join('; ')}`);
  }
}
