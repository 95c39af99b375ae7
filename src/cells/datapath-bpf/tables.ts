/**
 * The desired-state tables of the BPF datapath and how each is written to its kernel map
 * (ReconcileOps for src/lib/reconciler): cellium_lxc (IP -> endpoint), cellium_ipcache
 * (CIDR -> identity) and every endpoint's policy map, one object per endpoint keyed by its ID.
 * Desired values are normalized through the map codecs, so they compare equal to what the
 * kernel returns and the reconcilers' prune can tell drift from agreement.
 */
import { hostCidr } from '../../lib/addr.js';
import type { Codec } from '../../bpf/index.js';
import { ipcacheKeyCodec, lxcKeyCodec, lxcValueCodec, type IPCacheValue, type LxcValue } from '../../maps/index.js';
import { policyKeyId, type PolicyKey, type PolicyLpmEntry } from '../../maps/policy/key.js';
import { policyKeyCodec, policyValueCodec, type PolicyMap } from '../../maps/index.js';
import type { ReconcileOps } from '../../lib/reconciler/index.js';
import type { KernelMaps } from './kernel-maps.js';

/**
 * The desired policy map of one endpoint: its entries, as one object. The array is the shared
 * expansion of the endpoint's policy (the same array for every endpoint with the same policy), so
 * 4,000 endpoints under 250 rules hold 4,000 small objects and a few expansions, not an object
 * per endpoint and entry (millions: the agent outgrew 3.5 GiB).
 */
export interface PolicyObject {
  readonly endpointId: number;
  readonly entries: readonly PolicyLpmEntry[];
}

/** The policy table's key of an endpoint's map. */
export function policyObjectKey(endpointId: number): string {
  return String(endpointId);
}

const keyIds = new WeakMap<readonly PolicyLpmEntry[], string[]>();

/** policyKeyId of every entry of a (shared, unchanging) expansion, computed once per expansion. */
export function policyKeyIds(expanded: readonly PolicyLpmEntry[]): readonly string[] {
  let ids = keyIds.get(expanded);
  if (!ids) keyIds.set(expanded, (ids = expanded.map((e) => policyKeyId(e.key))));
  return ids;
}

/** Whether two lists hold the same keys with the same deny flags (the same shared expansion at once). */
export function sameEntries(a: readonly PolicyLpmEntry[], b: readonly PolicyLpmEntry[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  const deny = new Map<string, boolean>();
  const ia = policyKeyIds(a);
  for (let i = 0; i < a.length; i++) deny.set(ia[i]!, a[i]!.deny);
  const ib = policyKeyIds(b);
  for (let i = 0; i < b.length; i++) if (deny.get(ib[i]!) !== b[i]!.deny) return false;
  return true;
}

/** The policy table's equality: same endpoint, same entries. */
export function samePolicy(a: PolicyObject, b: PolicyObject): boolean {
  return a.endpointId === b.endpointId && sameEntries(a.entries, b.entries);
}

/** `v` as the kernel returns it after a write: encoded and decoded by the map's codec. */
function viaCodec<T>(codec: Codec<T>, v: T): T {
  const b = Buffer.alloc(codec.size);
  codec.encode(v, b, 0);
  return codec.decode(b, 0);
}

/** An lxc value as the kernel returns it (MAC normalized). */
export const lxcValue = (v: LxcValue): LxcValue => viaCodec(lxcValueCodec, v);

/** The canonical text of an IP (lxc key) as the kernel returns it. */
export const lxcKey = (ip: string): string => viaCodec(lxcKeyCodec, ip);

/** The canonical text of a CIDR (ipcache key) as the kernel returns it. */
export const ipcacheKey = (cidr: string): string => viaCodec(ipcacheKeyCodec, cidr);

/** The ipcache key of an endpoint IP's host CIDR (`/32`, `/128`). */
export const hostCidrKey = (ip: string): string => ipcacheKey(hostCidr(ip));

/** Runs `fn` on the whole batch; when it throws, every key fails with that error. */
function allOrError<K>(keys: readonly K[], fn: () => void, name: (k: K) => string): ReadonlyMap<string, Error> {
  try {
    fn();
    return new Map();
  } catch (err) {
    return new Map(keys.map((k) => [name(k), err as Error]));
  }
}

/** Deletes keys in one batch; when the batch fails (a key is already gone), one by one. */
function deleteAll<K>(keys: readonly K[], many: (ks: readonly K[]) => unknown, one: (k: K) => unknown, name: (k: K) => string): ReadonlyMap<string, Error> {
  if (keys.length === 0) return new Map();
  try {
    many(keys);
    return new Map();
  } catch {
    const failed = new Map<string, Error>();
    for (const k of keys) {
      try {
        one(k);
      } catch (err) {
        failed.set(name(k), err as Error);
      }
    }
    return failed;
  }
}

/** Writes the lxc table to cellium_lxc. */
export function lxcOps(kernel: KernelMaps): ReconcileOps<LxcValue> {
  return {
    update: async (batch) => allOrError(batch, () => kernel.lxc.setMany(batch), ([k]) => k),
    delete: async (keys) => deleteAll(keys, (ks) => kernel.lxc.deleteMany(ks), (k) => kernel.lxc.delete(k), (k) => k),
    list: async () => new Map(kernel.lxc.entries()),
  };
}

/** Writes the ipcache table to cellium_ipcache. */
export function ipcacheOps(kernel: KernelMaps): ReconcileOps<IPCacheValue> {
  return {
    update: async (batch) => allOrError(batch, () => kernel.ipcache.setMany(batch), ([k]) => k),
    delete: async (keys) => deleteAll(keys, (ks) => kernel.ipcache.deleteMany(ks), (k) => kernel.ipcache.delete(k), (k) => k),
    list: async () => new Map(kernel.ipcache.entries()),
  };
}

/** What was last written to an endpoint's policy map (which map, which entries): the next write is the difference. */
export interface WrittenPolicy {
  readonly mapId: number;
  readonly entries: readonly PolicyLpmEntry[];
}

/** A policy map as the kernel holds it. */
export function kernelEntries(map: PolicyMap): PolicyLpmEntry[] {
  return map.entries().map(([key, deny]) => ({ key, deny }));
}

const encodedAll = new WeakMap<readonly PolicyLpmEntry[], { keys: Buffer; values: Buffer }>();

/** Every entry of a (shared, unchanging) expansion encoded as the kernel's keys and values, once per expansion. */
export function encoded(want: readonly PolicyLpmEntry[]): { keys: Buffer; values: Buffer } {
  let e = encodedAll.get(want);
  if (!e) {
    const ks = policyKeyCodec.size;
    const vs = policyValueCodec.size;
    e = { keys: Buffer.alloc(ks * want.length), values: Buffer.alloc(vs * want.length) };
    for (let i = 0; i < want.length; i++) {
      policyKeyCodec.encode(want[i]!.key, e.keys, i * ks);
      policyValueCodec.encode(want[i]!.deny, e.values, i * vs);
    }
    encodedAll.set(want, e);
  }
  return e;
}

/**
 * Makes an endpoint's policy map hold `want`, writing the difference from what was last written
 * there (or, when unknown, from what the kernel holds): new and changed entries first, then stale
 * ones deleted, so no packet sees less than both the old and the new allow; when the map is too
 * full for that order, the deletes go first.
 */
export function writePolicy(map: PolicyMap, before: readonly PolicyLpmEntry[], want: readonly PolicyLpmEntry[]): void {
  if (before === want) return;
  if (before.length === 0) {
    // a new map (every endpoint's first build): the expansion's entries, encoded once for all endpoints sharing it
    const e = encoded(want);
    map.map.updateBatch(e.keys, e.values, want.length);
    return;
  }
  const have = new Map<string, PolicyLpmEntry>();
  const hb = policyKeyIds(before);
  for (let i = 0; i < before.length; i++) have.set(hb[i]!, before[i]!);
  const writes: [PolicyKey, boolean][] = [];
  const hw = policyKeyIds(want);
  for (let i = 0; i < want.length; i++) {
    const e = want[i]!;
    const cur = have.get(hw[i]!);
    have.delete(hw[i]!);
    if (!cur || cur.deny !== e.deny) writes.push([e.key, e.deny]);
  }
  const stale = [...have.values()].map((e) => e.key);
  const del = (): void => {
    if (!stale.length) return;
    try {
      map.deleteMany(stale);
    } catch {
      for (const k of stale) map.delete(k); // one was gone already: delete the others one by one
    }
  };
  // most of the map new (a policy change reaching every endpoint): all of it from the shared encoding
  // (rewriting an unchanged entry changes nothing a packet sees)
  const write = writes.length > want.length / 2 ? (): void => void map.map.updateBatch(encoded(want).keys, encoded(want).values, want.length) : (): void => void map.setMany(writes);
  try {
    if (writes.length) write();
  } catch (err) {
    if (!stale.length) throw err;
    del();
    write();
    return;
  }
  del();
}

/**
 * Writes the policy table to the endpoints' policy maps, one object per endpoint. `written`
 * remembers what each map was last given, so a change writes only its difference; a failed write
 * forgets it (the next attempt starts from the kernel's contents), and so does a prune that finds
 * the kernel holding something else. `endpoints()` names the endpoints whose maps the agent owns
 * now: only those are listed for pruning (maps of endpoints not restored yet are left alone).
 * Between endpoints the writer yields to the event loop every few milliseconds.
 */
export function policyOps(kernel: KernelMaps, endpoints: () => Iterable<number>, written: Map<number, WrittenPolicy>): ReconcileOps<PolicyObject> {
  return {
    async update(batch) {
      const failed = new Map<string, Error>();
      let slice = performance.now();
      for (const [key, v] of batch) {
        const id = v.endpointId;
        try {
          const map = kernel.policy(id);
          const last = written.get(id);
          const before = last && last.mapId === map.map.info.id ? last.entries : kernelEntries(map);
          written.delete(id);
          writePolicy(map, before, v.entries);
          written.set(id, { mapId: map.map.info.id, entries: v.entries });
        } catch (err) {
          failed.set(key, err as Error);
        }
        if (performance.now() - slice > 5) {
          await new Promise((r) => setImmediate(r));
          slice = performance.now();
        }
      }
      return failed;
    },
    async delete(keys) {
      const failed = new Map<string, Error>();
      for (const k of keys) {
        const id = Number(k);
        written.delete(id);
        const map = kernel.existingPolicy(id);
        if (!map) continue; // the map is gone, and its entries with it
        try {
          writePolicy(map, kernelEntries(map), []);
        } catch (err) {
          failed.set(k, err as Error);
        }
      }
      return failed;
    },
    async list() {
      const out = new Map<string, PolicyObject>();
      for (const id of endpoints()) {
        const map = kernel.existingPolicy(id);
        if (!map) continue;
        const entries = kernelEntries(map);
        const last = written.get(id);
        if (last && (last.mapId !== map.map.info.id || !sameEntries(last.entries, entries))) written.delete(id); // drifted: rewrite from the kernel's contents
        out.set(policyObjectKey(id), { endpointId: id, entries });
      }
      return out;
    },
  };
}
