/**
 * The identity allocator: label sets -> numbers. Reserved identities are fixed; endpoint (global)
 * identities take numbers 256..65535 recorded in a backend, so the same label set keeps its number
 * across restarts; CIDR identities are local (1<<24 scope) and live in memory only. Everything but
 * the reserved identities is reference counted: the last release frees an identity, and `gc`
 * frees those nobody references (restored from the backend but not re-allocated).
 */
import { createHash } from 'node:crypto';
import { Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import { formatLabels, labelsKey, parseLabel, sortLabels, type Label } from '../../lib/labels.js';
import { formatCidr, parseCidr } from '../../lib/addr.js';
import type { IdentityBackend, IdentityBackendEvent } from './backend.js';
import { cidrLabel } from './cidr.js';
import { allocationTimeout, allocatorStopping, backendConflict, invalidLabels, rangeExhausted } from './errors.js';
import { makeIdentity, reservedFor, reservedIdentities } from './reserved.js';
import type { AllocateOptions, Identity, IdentityAllocator, IdentityChange, IdentityRange } from './types.js';

/** Cilium's ranges. */
export const IDENTITY_RANGE: IdentityRange = Object.freeze({ minGlobal: 256, maxGlobal: 65535, localScope: 1 << 24 });
const MAX_LOCAL = IDENTITY_RANGE.localScope + 0xffffff;
const CLAIM_ATTEMPTS = 32;

/** Bounds of allocation in a cluster-wide backend. */
export interface AllocatorLimits {
  /** Time limit of one new global identity (--identity-allocation-timeout). */
  readonly timeoutMs: number;
  /** Aborts when the agent begins stopping: no allocation completes after it. */
  readonly stopping?: AbortSignal;
}

interface Entry {
  readonly identity: Identity;
  readonly key: string;
  readonly scope: 'global' | 'local';
  refs: number;
  /**
   * Whether this node holds its claim on the identity in the backend. False for identities a
   * cluster-wide backend reports from other nodes (and for ours after the last release): known,
   * so policy recognises them, but claimed again before this node uses one.
   */
  held: boolean;
}

/** Allocates identities; see the module comment. */
export class LocalIdentityAllocator implements IdentityAllocator {
  readonly range = IDENTITY_RANGE;
  private readonly subject = new Subject<IdentityChange>();
  /** See IdentityAllocator. */
  readonly changes$ = this.subject.asObservable();
  private readonly byId = new Map<number, Entry>();
  private readonly byKey = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<Entry>>();
  /** Label sets with more than one number in a cluster-wide backend: the numbers not in byKey. */
  private readonly seconds = new Map<string, Entry[]>();
  /** Numbers offered to the backend and not answered yet. */
  private readonly claiming = new Set<number>();
  private nextGlobal = IDENTITY_RANGE.minGlobal;
  private nextLocal = IDENTITY_RANGE.localScope + 1;
  private loaded?: Promise<void>;
  /** Whether the backend's events are followed (from the end of load on: the load's list covers what came before). */
  private following = false;

  constructor(
    private readonly backend: IdentityBackend,
    private readonly log?: Logger,
    private readonly limits: AllocatorLimits = { timeoutMs: 10_000 },
  ) {}

  /** Loads the backend's identities (once); they start without references until allocated. */
  load(): Promise<void> {
    this.loaded ??= this.backend.load().then((stored) => {
      const shared = !!this.backend.events$;
      for (const s of stored) this.mirror(s, !shared || s.held === true);
      this.log?.info({ backend: this.backend.name, restored: stored.length }, 'identities restored');
      // numbers start at a random point when agents share the range, so that they rarely race for one
      if (shared) this.jumpGlobal();
      this.following = true;
    });
    return this.loaded;
  }

  /** See IdentityAllocator. */
  async allocate(labels: readonly Label[], opts: AllocateOptions = {}): Promise<{ identity: Identity; isNew: boolean }> {
    const ls = normalize(labels);
    const reserved = reservedFor(ls);
    if (reserved) return { identity: reserved, isNew: false };
    await this.load();
    const key = labelsKey(ls);
    if (this.limits.stopping?.aborted && !this.byKey.get(key)?.held) throw allocatorStopping(key);
    return this.acquire(key, () => this.bounded(key, (signal) => this.createGlobal(ls, signal, opts.prefer)));
  }

  /**
   * Runs a backend allocation under the time limit and the agent's stop: past either it rejects,
   * and the backend keeps nothing of it.
   */
  private async bounded<T>(key: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timer = new AbortController();
    const t = setTimeout(() => timer.abort(new Error('timed out')), this.limits.timeoutMs);
    // one signal for both, without AbortSignal.any (a signal of its own with weak references to its
    // sources: tens of µs per new identity, one per endpoint creation): the stop aborts the timer's
    const stopping = this.limits.stopping;
    const onStop = (): void => timer.abort(stopping!.reason);
    if (stopping?.aborted) onStop();
    else stopping?.addEventListener('abort', onStop, { once: true });
    const signal = timer.signal;
    try {
      const out = await new Promise<T>((resolve, reject) => {
        // the backend's own rejection (naming what etcd answered) wins when it comes in the same turn
        const onAbort = (): void => void setImmediate(() => reject(signal.reason as Error));
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        fn(signal).then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
      });
      if (signal.aborted) throw signal.reason as Error;
      return out;
    } catch (err) {
      if (this.limits.stopping?.aborted) throw allocatorStopping(key);
      if (timer.signal.aborted) throw allocationTimeout(key, this.limits.timeoutMs, this.backend.name, err);
      throw err;
    } finally {
      clearTimeout(t);
      stopping?.removeEventListener('abort', onStop);
    }
  }

  /** See IdentityAllocator. */
  async allocateCIDR(cidr: string, opts: AllocateOptions = {}): Promise<Identity> {
    let c;
    try {
      c = parseCidr(cidr);
    } catch (err) {
      throw invalidLabels((err as Error).message);
    }
    if (c.prefix === 0) return reservedIdentities.get(2)!;
    const ls = sortLabels([cidrLabel(c), { source: 'reserved', key: 'world', value: '' }]);
    const key = labelsKey(ls);
    const { identity } = await this.acquire(key, async () => this.createLocal(ls, key, formatCidr(c), opts.prefer));
    return identity;
  }

  /** See IdentityAllocator. */
  async release(id: number): Promise<boolean> {
    const e = this.byId.get(id);
    if (!e || e.refs <= 0) return false;
    e.refs--;
    if (e.refs > 0) return false;
    await this.free(e);
    return true;
  }

  /** See IdentityAllocator. */
  lookup(id: number): Identity | undefined {
    return reservedIdentities.get(id) ?? this.byId.get(id)?.identity;
  }

  /** See IdentityAllocator. */
  lookupByLabels(labels: readonly Label[]): Identity | undefined {
    const ls = normalize(labels);
    return reservedFor(ls) ?? this.byKey.get(labelsKey(ls))?.identity;
  }

  /** See IdentityAllocator. */
  list(): Identity[] {
    return [...reservedIdentities.values(), ...[...this.byId.values()].map((e) => e.identity)].sort((a, b) => a.id - b.id);
  }

  /** Reference count of an identity (undefined for unknown and reserved ones). */
  refCount(id: number): number | undefined {
    return this.byId.get(id)?.refs;
  }

  /** See IdentityAllocator. */
  async gc(): Promise<number> {
    const unused = [...this.byId.values()].filter((e) => e.refs === 0 && e.held);
    for (const e of unused) await this.free(e);
    if (unused.length) this.log?.info({ freed: unused.length }, 'identity GC freed unreferenced identities');
    return unused.length;
  }

  /** Waits for pending backend writes; the backend's events are not followed any more. */
  async close(): Promise<void> {
    this.following = false;
    await this.backend.close();
  }

  /** Moves the next global number to a random point of the range. */
  private jumpGlobal(): void {
    this.nextGlobal = IDENTITY_RANGE.minGlobal + Math.floor(Math.random() * (IDENTITY_RANGE.maxGlobal - IDENTITY_RANGE.minGlobal));
  }

  /**
   * Records a stored identity (no references) unless its number is known already. A second number
   * for a known label set (two agents created one each: possible in a backend without
   * transactions, the CiliumIdentity one) is known by number, so traffic of the endpoints that
   * have it resolves; the label set's own number becomes the lowest, the one every agent picks,
   * unless this node holds the other (it keeps it until released, then takes the lowest).
   */
  private mirror(s: { readonly id: number; readonly labels: readonly string[] }, held: boolean): void {
    if (this.byId.has(s.id) || s.id < IDENTITY_RANGE.minGlobal || s.id > IDENTITY_RANGE.maxGlobal) return;
    const ls = sortLabels(s.labels.map(parseLabel));
    const key = labelsKey(ls);
    const e: Entry = { identity: makeIdentity(s.id, ls, false), key, scope: 'global', refs: 0, held };
    const have = this.byKey.get(key);
    if (!have) return this.insert(e);
    this.byId.set(s.id, e);
    this.seconds.set(key, [...(this.seconds.get(key) ?? []), e]);
    this.subject.next({ kind: 'add', identity: e.identity });
    if (s.id < have.identity.id && !have.held) this.promote(key);
    this.log?.warn({ labels: key, ids: [have.identity.id, s.id] }, 'the label set has two identities in the backend: the lowest is used for new references; the other is collected once unused');
  }

  /**
   * A cluster-wide backend's change (its `events$`, followed by the identity cell's observer job):
   * mirror identities of other nodes; forget unreferenced ones deleted there. Ignored before the
   * backend was loaded (the load's list has them) and after close.
   */
  onBackendEvent(ev: IdentityBackendEvent): void {
    if (!this.following) return;
    if (ev.kind === 'upsert') return this.mirror(ev.identity, false);
    const e = this.byId.get(ev.identity.id);
    if (!e || e.scope !== 'global') return;
    if (e.refs > 0) {
      this.log?.warn({ id: e.identity.id }, 'identity deleted in the backend while in use here; it is claimed again on the next allocation');
      e.held = false;
      return;
    }
    this.forget(e);
  }

  /** Drops an unreferenced identity; the label set falls back to another number it has, if any. */
  private forget(e: Entry): void {
    this.byId.delete(e.identity.id);
    const others = this.seconds.get(e.key)?.filter((o) => o !== e) ?? [];
    if (others.length) this.seconds.set(e.key, others);
    else this.seconds.delete(e.key);
    if (this.byKey.get(e.key) === e) {
      this.byKey.delete(e.key);
      if (others.length) this.promote(e.key);
    }
    this.subject.next({ kind: 'delete', identity: e.identity });
  }

  /**
   * Makes the lowest number of a label set with two its own (new references take it); the one it
   * replaces stays known by number, with its references.
   */
  private promote(key: string): void {
    const all = [...(this.seconds.get(key) ?? []), ...[this.byKey.get(key)].filter((x): x is Entry => !!x)];
    const lowest = all.sort((a, b) => a.identity.id - b.identity.id)[0];
    if (!lowest) return;
    this.byKey.set(key, lowest);
    const rest = all.filter((o) => o !== lowest);
    if (rest.length) this.seconds.set(key, rest);
    else this.seconds.delete(key);
  }

  private async acquire(key: string, create: () => Promise<Entry>): Promise<{ identity: Identity; isNew: boolean }> {
    const have = this.byKey.get(key);
    if (have?.held) {
      have.refs++;
      return { identity: have.identity, isNew: false };
    }
    let p = this.pending.get(key);
    const creator = !p;
    if (!p) {
      p = create();
      this.pending.set(key, p);
      const done = (): void => void this.pending.delete(key);
      p.then(done, done);
    }
    const e = await p;
    e.refs++;
    return { identity: e.identity, isNew: creator };
  }

  private async createGlobal(ls: Label[], signal: AbortSignal, prefer?: number): Promise<Entry> {
    const key = labelsKey(ls);
    const labels = formatLabels(ls);
    const known = this.byKey.get(key);
    if (known && !known.held) {
      // known from the cluster (or released here before): claim the same number again
      if ((await this.backend.claim(key, labels, known.identity.id, signal)) === known.identity.id) {
        known.held = true;
        return known;
      }
    }
    const refused = new Set<number>();
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const id = attempt === 0 && this.isFree('global', prefer) ? prefer! : this.backend.hashedNumbers ? this.hashedNumber(key, refused) : this.freeNumber('global');
      this.claiming.add(id); // hold the number while the backend records it
      let stored: number | undefined;
      try {
        stored = await this.backend.claim(key, labels, id, signal);
      } finally {
        this.claiming.delete(id);
      }
      if (signal.aborted) throw signal.reason as Error;
      if (stored === undefined) {
        refused.add(id);
        // another agent took the number: its neighbours are likely taken too, so go elsewhere
        if (this.backend.events$ && !this.backend.hashedNumbers) this.jumpGlobal();
        continue;
      }
      const mirrored = this.byId.get(stored);
      if (mirrored?.key === key) {
        mirrored.held = true;
        return mirrored;
      }
      const e: Entry = { identity: makeIdentity(stored, ls, false), key, scope: 'global', refs: 0, held: true };
      this.insert(e);
      this.log?.debug({ id: stored, labels }, 'identity allocated');
      return e;
    }
    throw backendConflict(key, CLAIM_ATTEMPTS);
  }

  private async createLocal(ls: Label[], key: string, cidr: string, prefer?: number): Promise<Entry> {
    const id = this.isFree('local', prefer) ? prefer! : this.freeNumber('local');
    const e: Entry = { identity: makeIdentity(id, ls, false), key, scope: 'local', refs: 0, held: true };
    this.insert(e);
    this.log?.debug({ id: e.identity.id, cidr }, 'CIDR identity allocated');
    return e;
  }

  /** Whether `id` is a number of the scope that nobody holds or is claiming. */
  private isFree(scope: 'global' | 'local', id: number | undefined): boolean {
    if (id === undefined || !Number.isInteger(id)) return false;
    const [min, max] = scope === 'global' ? [IDENTITY_RANGE.minGlobal, IDENTITY_RANGE.maxGlobal] : [IDENTITY_RANGE.localScope + 1, MAX_LOCAL];
    return id >= min && id <= max && !this.byId.has(id) && !this.claiming.has(id) && !(scope === 'global' && this.backend.isTaken?.(id));
  }

  private freeNumber(scope: 'global' | 'local'): number {
    const [min, max] = scope === 'global' ? [IDENTITY_RANGE.minGlobal, IDENTITY_RANGE.maxGlobal] : [IDENTITY_RANGE.localScope + 1, MAX_LOCAL];
    let n = scope === 'global' ? this.nextGlobal : this.nextLocal;
    for (let i = 0; i <= max - min; i++, n = n >= max ? min : n + 1) {
      if (!this.byId.has(n) && !this.claiming.has(n) && !(scope === 'global' && this.backend.isTaken?.(n))) {
        const next = n >= max ? min : n + 1;
        if (scope === 'global') this.nextGlobal = next;
        else this.nextLocal = next;
        return n;
      }
    }
    throw rangeExhausted(scope, min, max);
  }

  /**
   * The number a backend with hashed numbers is offered for a label set: from the one its hash
   * names on, the first that no other label set has in this node's view and was not refused in
   * this allocation. Numbers other label sets are claiming here are offered too: the backend's
   * create-only answer decides, so every agent walks the same sequence.
   */
  private hashedNumber(key: string, refused: ReadonlySet<number>): number {
    const { minGlobal: min, maxGlobal: max } = IDENTITY_RANGE;
    const span = max - min + 1;
    const start = createHash('sha256').update(key).digest().readUInt32BE(0) % span;
    for (let i = 0; i < span; i++) {
      const n = min + ((start + i) % span);
      const have = this.byId.get(n);
      if ((have && have.key !== key) || refused.has(n) || (!have && this.backend.isTaken?.(n))) continue;
      return n;
    }
    throw rangeExhausted('global', min, max);
  }

  private insert(e: Entry): void {
    this.byId.set(e.identity.id, e);
    this.byKey.set(e.key, e);
    this.subject.next({ kind: 'add', identity: e.identity });
  }

  private async free(e: Entry): Promise<void> {
    if (this.byId.get(e.identity.id) !== e) return;
    if (e.scope === 'global' && this.backend.events$) {
      // shared with the cluster: withdraw this node's claim; the identity stays known until deleted there
      e.held = false;
      this.log?.debug({ id: e.identity.id }, 'identity released');
      // a label set with two numbers: its lowest is used from now on
      if (this.seconds.has(e.key)) this.promote(e.key);
      await this.backend.remove(e.key, e.identity.id);
      return;
    }
    this.forget(e);
    this.log?.debug({ id: e.identity.id }, 'identity freed');
    if (e.scope === 'global') await this.backend.remove(e.key, e.identity.id);
  }
}

/** Sorts and de-duplicates labels; rejects labels the label syntax cannot express. */
function normalize(labels: readonly Label[]): Label[] {
  if (!Array.isArray(labels)) throw invalidLabels('expected an array of labels');
  const byKey = new Map<string, Label>();
  for (const l of labels) {
    if (!l || typeof l.key !== 'string' || l.key === '' || typeof l.source !== 'string') throw invalidLabels(`bad label ${JSON.stringify(l)}: expected {source, key, value}`);
    byKey.set(`${l.source}:${l.key}`, { source: l.source, key: l.key, value: l.value ?? '' });
  }
  return sortLabels([...byKey.values()]);
}
