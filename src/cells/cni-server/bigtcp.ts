/**
 * BIG TCP on pod veths (as Cilium's `--enable-ipv4-big-tcp` / `--enable-ipv6-big-tcp`): both ends
 * of each new veth get the host device's GSO/GRO maximums, IPv6's (IFLA_GSO_MAX_SIZE,
 * IFLA_GRO_MAX_SIZE) and IPv4's (IFLA_GSO_IPV4_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE, kernel 6.3 on).
 * The host device is `--big-tcp-device`, else the device of the node's default route. It is read
 * once, at the first ADD; what cannot be had (no such device, a kernel without the attributes) is
 * one warning in the log and veths without the sizes, never a failed ADD.
 */
import { readFileSync } from 'node:fs';
import type { LinkChange, LinkInfo } from '../../netlink/index.js';
import type { CniDeps } from './deps.js';

/** The sizes an ADD sets on both ends of a veth (empty when BIG TCP is off or impossible). */
export type VethOffload = Pick<LinkChange, 'gsoMaxSize' | 'groMaxSize' | 'gsoIpv4MaxSize' | 'groIpv4MaxSize'>;

/** The legacy GSO limit: sizes at or below it are not BIG TCP. */
const LEGACY_GSO_MAX = 65536;

const resolved = new WeakMap<CniDeps['net'], Promise<VethOffload>>();

/**
 * The device of the default route in this process's namespace (IPv4 first, then IPv6), from
 * /proc/net/route and /proc/net/ipv6_route; undefined when there is none.
 */
export function defaultRouteDevice(read: (path: string) => string = (p) => readFileSync(p, 'utf8')): string | undefined {
  try {
    for (const line of read('/proc/net/route').split('\n').slice(1)) {
      const [dev, dst, , , , , , mask] = line.trim().split(/\s+/);
      if (dev && dst === '00000000' && mask === '00000000') return dev;
    }
  } catch {
    // no IPv4 routing table here: try IPv6
  }
  try {
    for (const line of read('/proc/net/ipv6_route').split('\n')) {
      const f = line.trim().split(/\s+/);
      if (f.length >= 10 && /^0{32}$/.test(f[0]!) && f[1] === '00' && f[9] !== 'lo') return f[9];
    }
  } catch {
    // no IPv6 either
  }
  return undefined;
}

function pick(family: 'IPv4' | 'IPv6', dev: LinkInfo, gso: number | undefined, gro: number | undefined, warn: (msg: string) => void): [number, number] | undefined {
  if (gso === undefined || gro === undefined) {
    const attrs = family === 'IPv4' ? 'IFLA_GSO_IPV4_MAX_SIZE / IFLA_GRO_IPV4_MAX_SIZE (Linux 6.3)' : 'IFLA_GRO_MAX_SIZE (Linux 5.19)';
    warn(`${family} BIG TCP is off: this kernel does not report ${attrs} for ${dev.name}; upgrade the kernel or drop --enable-${family.toLowerCase()}-big-tcp`);
    return undefined;
  }
  if (gso <= LEGACY_GSO_MAX && gro <= LEGACY_GSO_MAX) {
    const keys = family === 'IPv4' ? 'gso_ipv4_max_size 196608 gro_ipv4_max_size 196608' : 'gso_max_size 196608 gro_max_size 196608';
    warn(`${family} BIG TCP has no effect: host device ${dev.name} allows only ${gso} (GSO) / ${gro} (GRO) bytes; raise them (ip link set ${dev.name} ${keys}) and restart the agent`);
  }
  return [gso, gro];
}

async function resolve(d: CniDeps): Promise<VethOffload> {
  const warn = (msg: string): void => d.log.warn({ bigTcpDevice: d.cfg.bigTcpDevice || undefined }, msg);
  const name = d.cfg.bigTcpDevice || defaultRouteDevice();
  if (!name) {
    warn('BIG TCP is off: the node has no default route to name the host device; set --big-tcp-device');
    return {};
  }
  const dev = await d.net.inHost((h) => h.getLink(name)).catch(() => undefined);
  if (!dev) {
    warn(`BIG TCP is off: host device ${name} does not exist; set --big-tcp-device to the node's uplink`);
    return {};
  }
  const out: { -readonly [K in keyof VethOffload]: number } = {};
  if (d.cfg.enableIpv6BigTcp) {
    const v6 = pick('IPv6', dev, dev.gsoMaxSize, dev.groMaxSize, warn);
    if (v6) [out.gsoMaxSize, out.groMaxSize] = v6;
  }
  if (d.cfg.enableIpv4BigTcp) {
    const v4 = pick('IPv4', dev, dev.gsoIpv4MaxSize, dev.groIpv4MaxSize, warn);
    if (v4) [out.gsoIpv4MaxSize, out.groIpv4MaxSize] = v4;
  }
  d.log.info({ device: name, ...out }, 'BIG TCP: pod veths get these GSO/GRO maximums');
  return out;
}

/** The sizes for new veths: resolved once per server (the first ADD), `{}` when BIG TCP is off. */
export function vethOffload(d: CniDeps): Promise<VethOffload> {
  if (!d.cfg.enableIpv4BigTcp && !d.cfg.enableIpv6BigTcp) return Promise.resolve({});
  let p = resolved.get(d.net);
  if (!p) {
    p = resolve(d);
    resolved.set(d.net, p);
  }
  return p;
}
