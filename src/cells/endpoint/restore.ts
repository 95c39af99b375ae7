/**
 * Endpoint restore at agent start (Cilium's restoreOldEndpoints): leftover `_next` directories are
 * deleted, every stored endpoint whose host interface still exists is brought back under its old ID
 * in state `restoring` with its IPs reserved again in IPAM (by the manager, as at creation; an
 * out-of-pool address is recorded again) and its identity re-claimed under the
 * number it had (so the pinned maps that name that number stay right, and identity GC never sees
 * it unreferenced), exposed (EndpointRestored), then regenerated. Endpoints whose interface is gone
 * are dropped with a log line, as are those whose IPs cannot be re-claimed. A stored endpoint that
 * cannot be read stops the start (unreadableEndpointState) rather than lose its programs. Nothing is
 * restored before the stored policy is back (`policyRestored`): a restored endpoint regenerates
 * with the rules it had, never with an empty repository; a missing policy store under endpoints
 * that realized a revision above 1 (rules existed; the state directory's RULES_MARKER says so for
 * all of them) stops the start (policyStoreMissing). Before
 * new endpoints may be created, the datapath removes what every other endpoint left (creations a
 * crash interrupted, dropped endpoints); once the restored ones are regenerated, it prunes what
 * nobody desires.
 */
import type { Logger } from '../../hive/index.js';
import { parseLabels } from '../../lib/labels.js';
import type { Datapath, LinkChecker, LiveEndpoint } from '../../datapath/types.js';
import type { Identity, IdentityAllocator } from '../identity/types.js';
import { Endpoint } from './endpoint.js';
import { policyStoreMissing, unreadableEndpointState } from './errors.js';
import type { PolicyRestoreOutcome } from '../policy/types.js';
import type { EndpointManagerImpl } from './manager.js';
import type { EndpointStateStore, StoredEndpoint } from './state-store.js';

/** What a restore did. */
export interface RestoreSummary {
  /** Endpoints brought back, by ID. */
  readonly restored: number[];
  /** Endpoints dropped, with why. */
  readonly dropped: { readonly id: number; readonly reason: string }[];
  /** Restored endpoints whose first regeneration failed (they stay, retried by their recovery controller). */
  readonly failed: { readonly id: number; readonly error: string }[];
  /** Interrupted regenerations cleaned up. */
  readonly removedNext: string[];
  /** IDs of endpoints that were not restored whose programs and policy maps the datapath removed. */
  readonly staleRemoved: number[];
}

/** What the datapath must keep of an endpoint: its ID and IPs. */
function liveOf(ep: Endpoint): LiveEndpoint {
  return { id: ep.id, ips: [ep.ipv4, ep.ipv6].filter((ip): ip is string => !!ip) };
}

/** Restores endpoints from the state directory. */
export class EndpointRestorer {
  private resolveDone!: (s: RestoreSummary) => void;
  private resolveExposed!: () => void;
  /** Settles once restored endpoints have been regenerated (or failed to). */
  readonly done: Promise<RestoreSummary> = new Promise((r) => (this.resolveDone = r));
  /** Settles once restored endpoints hold their IDs and IPs (new endpoints may be created from then on). */
  readonly exposed: Promise<void> = new Promise((r) => (this.resolveExposed = r));

  constructor(
    private readonly store: EndpointStateStore,
    private readonly manager: EndpointManagerImpl,
    private readonly linkExists: LinkChecker,
    private readonly identities: IdentityAllocator,
    /** Settles once the stored policy is in the repository (PolicyRestore.done). */
    private readonly policyRestored: Promise<PolicyRestoreOutcome | void>,
    private readonly datapath: Pick<Datapath, 'removeStale' | 'restoreDone'>,
    private readonly log: Logger,
  ) {}

  /** Brings stored endpoints back; resolves when they are exposed. Regeneration continues in the background (see `done`). */
  async restore(): Promise<Endpoint[]> {
    try {
      return await this.restoreAll();
    } finally {
      this.resolveExposed();
    }
  }

  private async restoreAll(): Promise<Endpoint[]> {
    const policy = await this.policyRestored;
    const scan = await this.store.scan();
    for (const name of scan.removedNext) this.log.info({ dir: name }, 'removed an interrupted regeneration directory');
    for (const name of scan.recoveredStale) this.log.info({ dir: name }, 'recovered an endpoint directory from an interrupted swap');
    if (scan.invalid.length) throw unreadableEndpointState(scan.invalid);
    // a lost policy store must not turn into an empty repository under endpoints that had rules
    // (the node's marker says it for every stored endpoint: policy-only regenerations do not rewrite their directories)
    const marked = this.store.rulesRealized;
    const enforced = marked !== undefined ? scan.endpoints : scan.endpoints.filter((e) => (e.policyRevision ?? 0) > 1);
    if (policy && !policy.found) {
      if (enforced.length) throw policyStoreMissing(policy.file, enforced.map((e) => e.id), Math.max(marked ?? 0, ...enforced.map((e) => e.policyRevision ?? 0)));
      // nothing stored to protect: the node starts with no rules, and what it realizes from now on is marked anew
      if (marked !== undefined) this.store.clearRulesRealized();
    }
    const dropped: { id: number; reason: string }[] = [];
    const restored: Endpoint[] = [];
    for (const stored of scan.endpoints) {
      const why = await this.restoreOne(stored, restored);
      if (why) {
        dropped.push({ id: stored.id, reason: why });
        this.log.info({ endpointID: stored.id, ifName: stored.spec.ifName, reason: why }, 'not restoring endpoint');
        await this.store.remove(stored.id);
      }
    }
    this.log.info({ restored: restored.length, dropped: dropped.length }, 'endpoints restored from the state directory');
    // no other endpoint exists yet: whatever else the datapath holds was left by a crash (a throw fails the start)
    const stale = (await this.datapath.removeStale?.(restored.map(liveOf))) ?? [];
    void this.regenerate(restored, dropped, scan.removedNext, stale);
    return restored;
  }

  /** Restores one endpoint; returns why it was dropped, or undefined. */
  private async restoreOne(stored: StoredEndpoint, into: Endpoint[]): Promise<string | undefined> {
    if (!(await this.linkExists(stored.spec.ifName))) return `host interface ${stored.spec.ifName} no longer exists`;
    const ep = new Endpoint({ ...stored.spec, requestedId: stored.id }, []);
    ep.restoreFrom(stored);
    try {
      await this.claimIdentity(ep, stored);
      ep.setState('restoring', 'Endpoint restoring');
      // re-reserves its addresses with IPAM (out-of-pool ones included), as at creation
      await this.manager.restoreEndpoint(ep);
    } catch (err) {
      const identity = ep.securityIdentity;
      if (identity) {
        ep.setIdentity(undefined);
        await this.identities.release(identity.id);
      }
      return `cannot be restored: ${(err as Error).message}`;
    }
    into.push(ep);
    return undefined;
  }

  /**
   * Takes the endpoint's identity under its stored number. A failure (the backend refusing) leaves
   * the endpoint restored without one: its regeneration allocates it, and retries like any failure;
   * dropping the endpoint would take its programs away.
   */
  private async claimIdentity(ep: Endpoint, stored: StoredEndpoint): Promise<void> {
    let identity: Identity;
    try {
      ({ identity } = await this.identities.allocate(parseLabels(ep.identityLabels()), { prefer: stored.identity }));
    } catch (err) {
      this.log.warn({ endpointID: stored.id, identity: stored.identity, err: (err as Error).message }, 'could not re-claim the identity of a restored endpoint; its regeneration allocates one');
      return;
    }
    ep.setIdentity(identity);
    if (stored.identity !== undefined && identity.id !== stored.identity) {
      const old = this.identities.lookup(stored.identity);
      const why = !old
        ? 'its old one is no longer known (removed as a second identity of the same labels, or freed)'
        : old.labels.join(';') === identity.labels.join(';') ? 'the labels have another identity in the cluster' : 'its old one belongs to other labels';
      this.log.warn({ endpointID: stored.id, was: stored.identity, now: identity.id }, `restored endpoint got a new identity number: ${why}`);
    }
  }

  private async regenerate(eps: readonly Endpoint[], dropped: RestoreSummary['dropped'], removedNext: string[], stale: number[]): Promise<void> {
    const results = await Promise.allSettled(eps.map((ep) => ep.regenerate('endpoint restored from the state directory')));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [{ id: eps[i]!.id, error: (r.reason as Error).message }] : []));
    for (const f of failed) this.log.warn({ endpointID: f.id, err: f.error }, 'regeneration of a restored endpoint failed');
    try {
      stale.push(...((await this.datapath.restoreDone?.(this.manager.list().map(liveOf))) ?? []));
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'restore: removing what endpoints that no longer exist left in the datapath failed');
    }
    this.resolveDone({ restored: eps.map((e) => e.id), dropped, failed, removedNext, staleRemoved: [...new Set(stale)].sort((a, b) => a - b) });
  }
}
