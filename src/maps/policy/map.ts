/**
 * An endpoint's policy map (cellium_policy_<id>) opened at its pin under the BPF root, typed,
 * removed, and synced to a policy map state writing only the difference.
 */
import { join } from 'node:path';
import { policyMapName } from '../../datapath/map-names.js';
import type { PolicyEntry } from '../../datapath/types.js';
import { BpfMap } from '../../bpf/bpf-map.js';
import { TypedMap } from '../../bpf/typed-map.js';
import { openSized } from '../open.js';
import { expandPolicy, policyKeyId, type PolicyKey } from './key.js';
import { POLICY_MAP_SPEC, policyKeyCodec, policyValueCodec } from './layout.js';

/** An endpoint's policy map: LPM key -> deny flag. */
export type PolicyMap = TypedMap<PolicyKey, boolean>;

/** Path of an endpoint's policy map pin. */
export function policyMapPath(bpfRoot: string, endpointId: number): string {
  return join(bpfRoot, policyMapName(endpointId));
}

/** Opens (or creates and pins) an endpoint's policy map (`maxEntries` as for openIPCacheMap). */
export function openPolicyMap(bpfRoot: string, endpointId: number, maxEntries?: number): PolicyMap {
  const spec = { ...POLICY_MAP_SPEC, name: policyMapName(endpointId) };
  return new TypedMap(openSized(policyMapPath(bpfRoot, endpointId), spec, maxEntries), policyKeyCodec, policyValueCodec);
}

/** Removes an endpoint's policy map pin; false when there was none. */
export function removePolicyMap(bpfRoot: string, endpointId: number): boolean {
  return BpfMap.unpin(policyMapPath(bpfRoot, endpointId));
}

/** What a policy sync wrote. */
export interface PolicySyncResult {
  readonly written: number;
  readonly deleted: number;
  readonly unchanged: number;
}

/**
 * Makes the policy map hold exactly the expansion of `entries`: reads the current keys (one batch
 * lookup), writes new and changed entries in one batch, then deletes stale keys in one batch.
 * Writes come before deletes, so no packet sees a state with less than both old and new allow.
 */
export function syncPolicyMap(map: PolicyMap, entries: readonly PolicyEntry[]): PolicySyncResult {
  const want = expandPolicy(entries);
  const have = new Map<string, [PolicyKey, boolean]>();
  for (const [k, deny] of map.entries()) have.set(policyKeyId(k), [k, deny]);
  const writes: [PolicyKey, boolean][] = [];
  let unchanged = 0;
  for (const e of want) {
    const id = policyKeyId(e.key);
    const cur = have.get(id);
    have.delete(id);
    if (cur && cur[1] === e.deny) unchanged++;
    else writes.push([e.key, e.deny]);
  }
  const stale = [...have.values()].map(([k]) => k);
  if (writes.length) map.setMany(writes);
  if (stale.length) map.deleteMany(stale);
  return { written: writes.length, deleted: stale.length, unchanged };
}
