/**
 * Addresses and MACs as the map layouts of bpf/lib/common.h hold them: the family codes, an
 * address in 16 bytes (IPv4 in the first 4), a MAC in 6. Shared by the ipcache, lxc and other maps.
 */

/** Address family codes in map keys (FAMILY_IPV4 / FAMILY_IPV6). */
export const Family = { ipv4: 4, ipv6: 6 } as const;

/** Writes an address (network order) into 16 bytes at `offset`: IPv4 in the first 4, the rest zero. */
export function writeAddr(family: 'ipv4' | 'ipv6', value: bigint, buf: Buffer, offset: number): void {
  buf.fill(0, offset, offset + 16);
  if (family === 'ipv4') buf.writeUInt32BE(Number(value), offset);
  else {
    buf.writeBigUInt64BE(value >> 64n, offset);
    buf.writeBigUInt64BE(value & 0xffffffffffffffffn, offset + 8);
  }
}

/** Reads an address (network order) of `family` from 16 bytes at `offset`. */
export function readAddr(family: 'ipv4' | 'ipv6', buf: Buffer, offset: number): bigint {
  if (family === 'ipv4') return BigInt(buf.readUInt32BE(offset));
  return (buf.readBigUInt64BE(offset) << 64n) | buf.readBigUInt64BE(offset + 8);
}

/** The family of an address family code in a map key; throws for an unknown code. */
export function familyOfCode(code: number): 'ipv4' | 'ipv6' {
  if (code === Family.ipv4) return 'ipv4';
  if (code === Family.ipv6) return 'ipv6';
  throw new Error(`unknown address family code ${code} in a map key`);
}

/** Parses a MAC "aa:bb:cc:dd:ee:ff" into 6 bytes (all zero for ""). */
export function macBytes(mac: string): Buffer {
  if (mac === '') return Buffer.alloc(6);
  const parts = mac.split(':');
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p))) throw new Error(`"${mac}" is not a MAC address`);
  return Buffer.from(parts.map((p) => parseInt(p, 16)));
}

/** Formats 6 bytes as "aa:bb:cc:dd:ee:ff". */
export function formatMac(buf: Buffer, offset = 0): string {
  return [...buf.subarray(offset, offset + 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}
