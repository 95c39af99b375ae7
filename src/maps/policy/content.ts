/**
 * The content id of a policy map state: a SHA-256 over its entries as the kernel holds them (each
 * entry's 12-byte key and 4-byte value, records sorted bytewise), so two expansions, or an
 * expansion and a map read back from the kernel, get the same id exactly when every lookup gives
 * the same answer in both. Endpoints whose ids are equal can share one policy map (the shared
 * bpf_lxc's slot of each points at it).
 */
import { createHash } from 'node:crypto';
import { POLICY_KEY_SIZE, POLICY_VALUE_SIZE, encodePolicyKey, encodePolicyValue, type PolicyLpmEntry } from './key.js';

const RECORD = POLICY_KEY_SIZE + POLICY_VALUE_SIZE;
const ids = new WeakMap<readonly PolicyLpmEntry[], string>();

/** The content id (64 hex digits) of a policy map state; remembered per (shared, unchanging) entries array. */
export function policyContentId(entries: readonly PolicyLpmEntry[]): string {
  let id = ids.get(entries);
  if (id !== undefined) return id;
  const buf = Buffer.alloc(RECORD * entries.length);
  const records: Buffer[] = new Array<Buffer>(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const at = i * RECORD;
    encodePolicyKey(entries[i]!.key, buf, at);
    encodePolicyValue(entries[i]!.deny, buf, at + POLICY_KEY_SIZE);
    records[i] = buf.subarray(at, at + RECORD);
  }
  records.sort(Buffer.compare);
  const h = createHash('sha256');
  for (const r of records) h.update(r);
  id = h.digest('hex');
  ids.set(entries, id);
  return id;
}
