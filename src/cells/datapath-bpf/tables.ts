/**
 * The desired-state tables of the BPF datapath and how each is written to its kernel map
 * (ReconcileOps for src/lib/reconciler): cellium_lxc (IP -> endpoint), cellium_ipcache
 * (CIDR -> identity) and every endpoint's policy entries in one table keyed `<id>#<policy key>`.
 * Desired values are normalized through the map codecs, so they compare equal to what the
 * kernel returns and the reconcilers' prune can tell drift from agreement.
 */
import { hostCidr } from '../../lib/addr.js';
import type { Codec } from '../../bpf/index.js';
import { ipcacheKeyCodec, lxcKeyCodec, lxcValueCodec, type IPCacheValue, type LxcValue } from '../../maps/index.js';
import { policyKeyId, type PolicyKey, type PolicyLpmEntry } from '../../maps/policy/key.js';
import type { ReconcileOps } from '../../lib/reconciler/index.js';
import type { KernelMaps } from './kernel-maps.js';

/** A desired policy map entry of one endpoint. */
export interface PolicyObject {
  readonly endpointId: number;
  readonly key: PolicyKey;
  readonly deny: boolean;
}

/** The policy table's key of an endpoint's LPM key (or of its policyKeyId). */
export function policyObjectKey(endpointId: number, key: PolicyKey | string): string {
  return `${endpointId}#${typeof key === 'string' ? key : policyKeyId(key)}`;
}

const keyIds = new WeakMap<readonly PolicyLpmEntry[], string[]>();

/** policyKeyId of every entry of a (shared, unchanging) expansion, computed once per expansion. */
export function policyKeyIds(expanded: readonly PolicyLpmEntry[]): readonly string[] {
  let ids = keyIds.get(expanded);
  if (!ids) keyIds.set(expanded, (ids = expanded.map((e) => policyKeyId(e.key))));
  return ids;
}

const POLICY_OBJECT_KEY = /^(\d+)#([ie])\|(\d+)\|(\d+)\|(\d+)\/(\d+)$/;

/** The endpoint and LPM key of a policy table key (the inverse of policyObjectKey). */
export function parsePolicyObjectKey(s: string): { endpointId: number; key: PolicyKey } {
  const m = POLICY_OBJECT_KEY.exec(s);
  if (!m) throw new Error(`"${s}" is not a policy table key (<endpoint id>#<i|e>|<identity>|<proto>|<port>/<prefix>)`);
  return {
    endpointId: Number(m[1]),
    key: { prefixLen: Number(m[6]), egress: m[2] === 'e', identity: Number(m[3]), protocol: Number(m[4]), dport: Number(m[5]) },
  };
}

/** A policy object in the kernel's normal form (key fields in decode order). */
export function policyObject(endpointId: number, key: PolicyKey, deny: boolean): PolicyObject {
  return { endpointId, key: { prefixLen: key.prefixLen, egress: key.egress, identity: key.identity, protocol: key.protocol, dport: key.dport }, deny };
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

function byEndpoint<T>(items: readonly T[], idOf: (t: T) => number): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const it of items) {
    const id = idOf(it);
    let l = out.get(id);
    if (!l) out.set(id, (l = []));
    l.push(it);
  }
  return out;
}

/**
 * Writes the policy table to the endpoints' policy maps. `endpoints()` names the endpoints whose
 * maps the agent owns now: only those are listed for pruning (maps of endpoints not restored yet
 * are left alone).
 */
export function policyOps(kernel: KernelMaps, endpoints: () => Iterable<number>): ReconcileOps<PolicyObject> {
  return {
    async update(batch) {
      const failed = new Map<string, Error>();
      for (const [id, group] of byEndpoint(batch, ([, v]) => v.endpointId)) {
        const errs = allOrError(group, () => kernel.policy(id).setMany(group.map(([, v]) => [v.key, v.deny] as const)), ([k]) => k);
        for (const [k, e] of errs) failed.set(k, e);
      }
      return failed;
    },
    async delete(keys) {
      const failed = new Map<string, Error>();
      const parsed = keys.map((k) => ({ k, ...parsePolicyObjectKey(k) }));
      for (const [id, group] of byEndpoint(parsed, (p) => p.endpointId)) {
        const map = kernel.existingPolicy(id);
        if (!map) continue; // the map is gone, and its entries with it
        const errs = deleteAll(group, (g) => map.deleteMany(g.map((p) => p.key)), (p) => map.delete(p.key), (p) => p.k);
        for (const [k, e] of errs) failed.set(k, e);
      }
      return failed;
    },
    async list() {
      const out = new Map<string, PolicyObject>();
      for (const id of endpoints()) {
        const map = kernel.existingPolicy(id);
        if (!map) continue;
        for (const [key, deny] of map.entries()) out.set(policyObjectKey(id, key), policyObject(id, key, deny));
      }
      return out;
    },
  };
}
