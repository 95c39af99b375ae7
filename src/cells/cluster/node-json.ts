/**
 * Cilium's node record in the kvstore (`cilium/state/nodes/v1/<cluster>/<name>`, Go's JSON of
 * nodeTypes.Node): `{"Name","Cluster","IPAddresses":[{"Type":"InternalIP","IP"}],"IPv4AllocCIDR":{"IP","Mask"}}`
 * with the mask as Go writes a net.IPMask (base64 of its bytes).
 */
import { isIP } from 'node:net';
import type { ClusterNode } from './types.js';

/** The JSON value of a node. */
export function nodeJson(n: ClusterNode): string {
  return JSON.stringify({
    Name: n.name,
    Cluster: n.cluster,
    IPAddresses: [{ Type: 'InternalIP', IP: n.ipv4 }],
    IPv4AllocCIDR: n.ipv4AllocCidr ? cidrJson(n.ipv4AllocCidr) : null,
    IPv6AllocCIDR: null,
    ClusterID: 0,
    Source: 'local',
  });
}

function cidrJson(cidr: string): { IP: string; Mask: string } {
  const [ip, bits] = cidr.split('/');
  const n = Number(bits);
  const mask = Buffer.alloc(4);
  for (let i = 0; i < 4; i++) {
    const b = Math.max(0, Math.min(8, n - i * 8));
    mask[i] = (0xff << (8 - b)) & 0xff;
  }
  return { IP: ip, Mask: mask.toString('base64') };
}

function cidrOf(v: unknown): string | undefined {
  const c = v as { IP?: unknown; Mask?: unknown } | null;
  if (!c || typeof c.IP !== 'string' || typeof c.Mask !== 'string' || isIP(c.IP) !== 4) return undefined;
  const mask = Buffer.from(c.Mask, 'base64');
  let bits = 0;
  for (const b of mask) bits += b.toString(2).replace(/0/g, '').length;
  return `${c.IP}/${bits}`;
}

/** Parses a node record; undefined when it is not one (a foreign or corrupt value is skipped, not trusted). */
export function parseNodeJson(text: string, self: string): ClusterNode | undefined {
  let d: Record<string, unknown>;
  try {
    d = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof d?.Name !== 'string' || typeof d.Cluster !== 'string' || !Array.isArray(d.IPAddresses)) return undefined;
  const ip = (d.IPAddresses as { Type?: unknown; IP?: unknown }[]).find((a) => typeof a?.IP === 'string' && isIP(a.IP) === 4)?.IP as string | undefined;
  if (!ip) return undefined;
  const alloc = cidrOf(d.IPv4AllocCIDR);
  return { name: d.Name, cluster: d.Cluster, ipv4: ip, ...(alloc ? { ipv4AllocCidr: alloc } : {}), local: d.Name === self };
}
