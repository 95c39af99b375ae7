/**
 * Reading the agent's pinned BPF maps from the bench process, read-only: an endpoint's policy map,
 * and the lxc and ipcache entries of one address (the kernel side of what a change must reach).
 * A map that is not pinned reads as empty (never created here: the agent owns its pins).
 */
import { join } from 'node:path';
import { BpfMap } from '../../src/bpf/bpf-map.js';
import { TypedMap, type Codec } from '../../src/bpf/typed-map.js';
import { IPCACHE_MAP, LXC_MAP } from '../../src/datapath/map-names.js';
import { ipcacheKeyCodec, ipcacheValueCodec, lxcKeyCodec, lxcValueCodec, policyKeyCodec, policyMapPath, policyValueCodec, type PolicyKey } from '../../src/maps/index.js';

/** Runs `fn` on the map pinned at `path` (closed after); undefined when nothing is pinned there. */
function withPinned<K, V, R>(path: string, k: Codec<K>, v: Codec<V>, fn: (m: TypedMap<K, V>) => R): R | undefined {
  let map: BpfMap;
  try {
    map = BpfMap.openPinned(path);
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return fn(new TypedMap(map, k, v));
  } finally {
    map.close();
  }
}

/** The keys of endpoint `id`'s policy map (allow and deny alike); empty when it has none. */
export function policyKeys(bpfRoot: string, id: number): PolicyKey[] {
  return withPinned(policyMapPath(bpfRoot, id), policyKeyCodec, policyValueCodec, (m) => m.entries().map(([k]) => k)) ?? [];
}

/** Whether endpoint `id`'s policy map allows ingress on TCP `port` from every peer (identity 0). */
export function allowsIngressPort(bpfRoot: string, id: number, port: number): boolean {
  return policyKeys(bpfRoot, id).some((k) => !k.egress && k.identity === 0 && k.protocol === 6 && k.dport === port);
}

/** The identity cellium_lxc holds for local endpoint address `ip`. */
export function lxcIdentity(bpfRoot: string, ip: string): number | undefined {
  return withPinned(join(bpfRoot, LXC_MAP), lxcKeyCodec, lxcValueCodec, (m) => m.get(ip)?.identity);
}

/** The identity cellium_ipcache holds for `ip`/32. */
export function ipcacheIdentity(bpfRoot: string, ip: string): number | undefined {
  return withPinned(join(bpfRoot, IPCACHE_MAP), ipcacheKeyCodec, ipcacheValueCodec, (m) => m.get(`${ip}/32`)?.identity);
}
