/**
 * The policy map's key and value, shared by both datapaths (pure, no I/O): PolicyEntry[] -> LPM
 * keys of the per-endpoint policy map `cellium_policy_<id>` (port ranges expanded to aligned
 * power-of-two blocks), and the exact byte encoding of keys and values (bpf/lib/common.h: struct
 * policy_key, struct policy_value). The in-memory LPM table over these keys is
 * src/datapath/model/policy-lpm.ts.
 *
 * Key layout (12 bytes): u32 prefixLen (host order) | u8 egress | u32 identity (host order) |
 * u8 protocol | u16 dport (network order). The prefix covers egress (8 bits), identity (32),
 * protocol (8), dport (16): L3-only entries have prefix 40, protocol-wide entries 48, exact
 * ports 64, a port block of size 2^k has 64 - k.
 */
import { endianness } from 'node:os';
import type { PolicyEntry } from '../../datapath/types.js';

/** Size in bytes of a policy map key (struct policy_key). */
export const POLICY_KEY_SIZE = 12;
/** Size in bytes of a policy map value (struct policy_value). */
export const POLICY_VALUE_SIZE = 4;
/** Prefix length of a fully specified key (egress + identity + protocol + dport bits). */
export const POLICY_PREFIX_FULL = 64;
/** Prefix length of an L3-only entry (egress + identity). */
export const POLICY_PREFIX_L3 = 40;
/** Prefix length of a protocol-wide entry (egress + identity + protocol). */
export const POLICY_PREFIX_PROTO = 48;

/** One key of the policy LPM map; dport is in host order here (encoded in network order). */
export interface PolicyKey {
  readonly prefixLen: number;
  readonly egress: boolean;
  readonly identity: number;
  readonly protocol: number;
  readonly dport: number;
}

/** One entry of the policy LPM map. */
export interface PolicyLpmEntry {
  readonly key: PolicyKey;
  readonly deny: boolean;
}

const LE = endianness() === 'LE';

function checkUint(v: number, max: number, what: string, e: PolicyEntry): void {
  if (!Number.isInteger(v) || v < 0 || v > max) {
    throw new RangeError(`policy entry ${JSON.stringify(e)}: ${what} must be an integer in 0..${max}`);
  }
}

/**
 * Splits the inclusive port range [port, endPort] into aligned power-of-two blocks, each as
 * {port: first port, prefixLen}. E.g. 80..83 -> [{port: 80, prefixLen: 62}].
 */
export function portRangeBlocks(port: number, endPort: number): { port: number; prefixLen: number }[] {
  const out: { port: number; prefixLen: number }[] = [];
  let start = port;
  while (start <= endPort) {
    let k = 0;
    while (k < 16 && start % 2 ** (k + 1) === 0 && start + 2 ** (k + 1) - 1 <= endPort) k++;
    out.push({ port: start, prefixLen: POLICY_PREFIX_FULL - k });
    start += 2 ** k;
  }
  return out;
}

/** A stable text id of a key (`e|42|6|80/64`), for diffs and deduplication. */
export function policyKeyId(k: PolicyKey): string {
  return `${k.egress ? 'e' : 'i'}|${k.identity}|${k.protocol}|${k.dport}/${k.prefixLen}`;
}

/**
 * Expands policy entries into LPM map entries: protocol 0 -> prefix 40; port 0 -> 48; a port ->
 * 64; a range -> its blocks. Entries that produce the same key merge, deny winning. Throws a
 * RangeError for an entry out of range (identity > u32, protocol > 255, a port with protocol 0,
 * endPort < port, a range starting at port 0). The result is sorted by key id.
 */
export function expandPolicy(entries: readonly PolicyEntry[]): PolicyLpmEntry[] {
  const byId = new Map<string, PolicyLpmEntry>();
  const add = (key: PolicyKey, deny: boolean): void => {
    const id = policyKeyId(key);
    const prev = byId.get(id);
    if (!prev || (deny && !prev.deny)) byId.set(id, { key, deny });
  };
  for (const e of entries) {
    checkUint(e.identity, 0xffffffff, 'identity', e);
    checkUint(e.protocol, 255, 'protocol', e);
    checkUint(e.port, 0xffff, 'port', e);
    const end = e.endPort ?? e.port;
    checkUint(end, 0xffff, 'endPort', e);
    if (e.protocol === 0 && (e.port !== 0 || end !== 0)) throw new RangeError(`policy entry ${JSON.stringify(e)}: a port needs a protocol`);
    if (end < e.port) throw new RangeError(`policy entry ${JSON.stringify(e)}: endPort is below port`);
    if (e.port === 0 && end !== 0) throw new RangeError(`policy entry ${JSON.stringify(e)}: a port range cannot start at 0 (port 0 means any port)`);
    const base = { egress: e.direction === 'egress', identity: e.identity, protocol: e.protocol };
    if (e.protocol === 0) add({ ...base, prefixLen: POLICY_PREFIX_L3, protocol: 0, dport: 0 }, e.deny);
    else if (e.port === 0) add({ ...base, prefixLen: POLICY_PREFIX_PROTO, dport: 0 }, e.deny);
    else for (const b of portRangeBlocks(e.port, end)) add({ ...base, prefixLen: b.prefixLen, dport: b.port }, e.deny);
  }
  return [...byId.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

const expansions = new WeakMap<readonly PolicyEntry[], PolicyLpmEntry[]>();

/**
 * expandPolicy, remembered per entries array: endpoints handed the same (shared, never changed)
 * map state, e.g. by the policy repository's distillation cache, expand it once. Throws like
 * expandPolicy; the result is shared and must not be changed.
 */
export function expandPolicyCached(entries: readonly PolicyEntry[]): readonly PolicyLpmEntry[] {
  let out = expansions.get(entries);
  if (!out) expansions.set(entries, (out = expandPolicy(entries)));
  return out;
}

/** Encodes a key into `buf` at `offset` (a new 12-byte Buffer by default); host bits beyond the prefix are cleared. */
export function encodePolicyKey(k: PolicyKey, buf: Buffer = Buffer.alloc(POLICY_KEY_SIZE), offset = 0): Buffer {
  const data = maskPolicyKeyData(packPolicyKeyData(k), k.prefixLen);
  if (LE) buf.writeUInt32LE(k.prefixLen, offset);
  else buf.writeUInt32BE(k.prefixLen, offset);
  buf.writeBigUInt64BE(data, offset + 4);
  return buf;
}

/** Decodes a key from `buf` at `offset`. */
export function decodePolicyKey(buf: Buffer, offset = 0): PolicyKey {
  const prefixLen = LE ? buf.readUInt32LE(offset) : buf.readUInt32BE(offset);
  return {
    prefixLen,
    egress: buf[offset + 4] !== 0,
    identity: LE ? buf.readUInt32LE(offset + 5) : buf.readUInt32BE(offset + 5),
    protocol: buf[offset + 9]!,
    dport: buf.readUInt16BE(offset + 10),
  };
}

/** Encodes a value (deny flag) into `buf` at `offset` (a new 4-byte Buffer by default). */
export function encodePolicyValue(deny: boolean, buf: Buffer = Buffer.alloc(POLICY_VALUE_SIZE), offset = 0): Buffer {
  buf.fill(0, offset, offset + POLICY_VALUE_SIZE);
  buf[offset] = deny ? 1 : 0;
  return buf;
}

/** Decodes a value: whether the entry denies. */
export function decodePolicyValue(buf: Buffer, offset = 0): boolean {
  return buf[offset] !== 0;
}

/** The 8 data bytes of a key (as the kernel compares them) as a big-endian 64-bit number. */
export function packPolicyKeyData(k: { egress: boolean; identity: number; protocol: number; dport: number }): bigint {
  const b = Buffer.alloc(8);
  b[0] = k.egress ? 1 : 0;
  if (LE) b.writeUInt32LE(k.identity >>> 0, 1);
  else b.writeUInt32BE(k.identity >>> 0, 1);
  b[5] = k.protocol & 0xff;
  b.writeUInt16BE(k.dport & 0xffff, 6);
  return b.readBigUInt64BE(0);
}

/** The key data with the bits beyond `prefixLen` cleared (what an LPM lookup compares). */
export function maskPolicyKeyData(data: bigint, prefixLen: number): bigint {
  const p = BigInt(Math.max(0, Math.min(POLICY_PREFIX_FULL, prefixLen)));
  return p === 0n ? 0n : data & (((1n << p) - 1n) << (64n - p));
}
