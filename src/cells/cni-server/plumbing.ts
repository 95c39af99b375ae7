/**
 * The pod's network plumbing, as cilium-cni's connector does it: a veth pair whose host side is
 * `lxc<hash>` and whose peer is created directly inside the pod's namespace as CNI_IFNAME; the pod
 * gets its addresses (/32, /128), a default route via the pool gateway (onlink) and a permanent
 * neighbour entry for the gateway pointing at the host side's MAC; the host gets a permanent
 * neighbour entry and a route for each pod IP via the lxc device. With IPv6, both ends have
 * duplicate address detection off (accept_dad=0 before any address exists, pod addresses with
 * IFA_F_NODAD), so no address is ever tentative and no packet waits for neighbour discovery: the
 * pod answers its first IPv6 packet as it does its first IPv4 one. Each side's setup is one batch
 * of netlink steps (one worker hop). Also the generic-veth chaining lookup of an existing interface.
 */
import { createHash, randomBytes } from 'node:crypto';
import { CniErrorCode } from '../../cni/protocol.js';
import type { LinkInfo, NetlinkStep } from '../../netlink/index.js';
import type { VethOffload } from './bigtcp.js';
import { CniFailure, ioFailure } from './errors.js';
import type { LinkOps, NetOps } from './netops.js';

/** Prefix of host-side interfaces (Cilium's). */
export const HOST_IF_PREFIX = 'lxc';

/**
 * The host-side name of an attachment: `lxc` + the first 11 hex digits of the SHA-256 of the
 * container id (14 characters); an interface other than eth0 is hashed with its name so two
 * attachments of one container do not clash.
 */
export function hostIfName(containerId: string, ifName: string): string {
  const key = ifName === 'eth0' ? containerId : `${containerId}/${ifName}`;
  return HOST_IF_PREFIX + createHash('sha256').update(key).digest('hex').slice(0, 11);
}

/** One address to give the pod. */
export interface PodAddress {
  readonly ip: string;
  readonly family: 'ipv4' | 'ipv6';
  readonly gateway: string;
}

/** What the pod's interface setup needs. */
export interface VethSetup {
  readonly hostName: string;
  readonly ifName: string;
  readonly netns: string;
  readonly mtu: number;
  readonly addresses: readonly PodAddress[];
  /** The pod interface's MAC, set at creation (so the endpoint can be built before the pod side is configured). */
  readonly podMac: string;
  /** The pod's routes (a delegated IPAM plugin's); a default route via each address's gateway when absent. */
  readonly routes?: readonly { readonly dst: string; readonly gw: string }[];
  /** BIG TCP: GSO/GRO maximums for both ends (bigtcp.ts); none when off. */
  readonly offload?: VethOffload;
}

/** Whether the setup carries BIG TCP sizes. */
function hasOffload(s: VethSetup): s is VethSetup & { offload: VethOffload } {
  return s.offload !== undefined && Object.keys(s.offload).length > 0;
}

/** A random locally administered unicast MAC, for a pod interface. */
export function randomPodMac(): string {
  const b = randomBytes(6);
  b[0] = (b[0]! & 0xfe) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/** Both sides of a chained pod's veth. */
export interface PodLinks {
  readonly host: LinkInfo;
  readonly pod: LinkInfo;
}

/** The CIDR a pod address is configured with. */
export function podCidr(a: Pick<PodAddress, 'ip' | 'family'>): string {
  return `${a.ip}/${a.family === 'ipv4' ? 32 : 128}`;
}

async function createVeth(host: LinkOps, s: VethSetup): Promise<LinkInfo> {
  // both sides start down; the host side comes up once the endpoint is ready (activateHostVeth)
  const opts = { name: s.hostName, peerName: s.ifName, peerNetns: s.netns, mtu: s.mtu, peerMac: s.podMac };
  try {
    return await host.createVeth(opts);
  } catch (err) {
    // A host side left behind by an earlier, interrupted attachment: remove it and try once more.
    if ((err as { code?: string }).code === 'EEXIST' && (await host.deleteLink(s.hostName).catch(() => false))) {
      return host.createVeth(opts);
    }
    throw err;
  }
}

/** Creates the veth pair, both sides down: the host side here, its peer inside the pod's namespace; nothing is left on failure. */
export function createPodVeth(net: NetOps, s: VethSetup): Promise<LinkInfo> {
  return net.inHost(async (host) => {
    try {
      return await createVeth(host, s);
    } catch (err) {
      throw ioFailure(`creating the veth pair ${s.hostName} / ${s.ifName} in ${s.netns}`, err);
    }
  });
}

/** Whether the pod gets an IPv6 address. */
function hasIPv6(s: Pick<VethSetup, 'addresses'>): boolean {
  return s.addresses.some((a) => a.family === 'ipv6');
}

/**
 * The step turning IPv6 duplicate address detection off on `dev` (Cilium's lxc devices have it
 * off): written while the device is down and has no address, so its link-local address is never
 * tentative (a tentative one cannot source neighbour solicitations or answers). The key uses `/`
 * so an interface name with a dot stays one path element.
 */
function noDadStep(dev: string): NetlinkStep {
  return { op: 'writeSysctl', key: `net/ipv6/conf/${dev}/accept_dad`, value: 0 };
}

/** The pod side's setup, as one batch in its namespace: lo up, DAD off (IPv6), addresses, interface up, default routes, gateway neighbours. */
function podSteps(s: VethSetup, hostMac: string): NetlinkStep[] {
  return [
    { op: 'setLink', name: 'lo', change: { up: true } },
    ...(hasIPv6(s) ? [noDadStep(s.ifName)] : []),
    ...s.addresses.map((a): NetlinkStep => ({ op: 'addAddress', dev: s.ifName, cidr: podCidr(a), noDad: a.family === 'ipv6' })),
    { op: 'setLink', name: s.ifName, change: { up: true, ...s.offload } },
    ...s.addresses.flatMap((a): NetlinkStep[] => [
      ...(s.routes ? [] : [{ op: 'addRoute', route: { dst: 'default', gateway: a.gateway, dev: s.ifName, onlink: true } } as const]),
      { op: 'addNeighbor', dev: s.ifName, ip: a.gateway, mac: hostMac, permanent: true },
    ]),
    ...(s.routes ?? []).map((r): NetlinkStep => ({ op: 'addRoute', route: { dst: r.dst, gateway: r.gw, dev: s.ifName, onlink: true } })),
  ];
}

/** The host's settings for routing between pods: forwarding on, no reverse-path filter on the lxc device, DAD off on it (IPv6; it is still down), and its BIG TCP sizes. */
function hostSysctlSteps(s: VethSetup): NetlinkStep[] {
  return [
    ...(hasOffload(s) ? [{ op: 'setLink', name: s.hostName, change: { ...s.offload } } as const] : []),
    ...(s.addresses.some((a) => a.family === 'ipv4') ? [{ op: 'writeSysctl', key: 'net.ipv4.ip_forward', value: 1 } as const] : []),
    ...(hasIPv6(s) ? [{ op: 'writeSysctl', key: 'net.ipv6.conf.all.forwarding', value: 1 } as const, noDadStep(s.hostName)] : []),
    { op: 'writeSysctl', key: `net.ipv4.conf.${s.hostName}.rp_filter`, value: 0 },
  ];
}

/**
 * Configures a pair createPodVeth made, the pod's side and the host's sysctls at once (one batch
 * each). On failure the caller removes the pair (deleting the host side takes the peer with it).
 */
export async function configurePodVeth(net: NetOps, s: VethSetup, hostLink: Pick<LinkInfo, 'mac'>): Promise<void> {
  const [pod, host] = await Promise.allSettled([net.applySteps(s.netns, podSteps(s, hostLink.mac)), net.applySteps(undefined, hostSysctlSteps(s))]);
  if (pod.status === 'rejected') throw ioFailure(`configuring ${s.ifName} in ${s.netns}`, pod.reason);
  if (host.status === 'rejected') throw ioFailure(`configuring the host side ${s.hostName} of ${s.ifName} in ${s.netns}`, host.reason);
}

/**
 * Brings the host side up, gives it a permanent neighbour entry for each pod IP (the pod's MAC, so
 * the host never resolves a pod address: no ARP, no neighbour discovery) and routes the pod's IPs
 * to it: the last step of ADD, once the endpoint (and its program) is ready, so no packet crosses
 * the pair before its policy is in place.
 */
export async function activateHostVeth(net: NetOps, s: VethSetup): Promise<void> {
  try {
    await net.applySteps(undefined, [
      { op: 'setLink', name: s.hostName, change: { up: true } },
      ...s.addresses.map((a): NetlinkStep => ({ op: 'addNeighbor', dev: s.hostName, ip: a.ip, mac: s.podMac, permanent: true })),
      ...s.addresses.map((a): NetlinkStep => ({ op: 'addRoute', route: { dst: a.ip, dev: s.hostName, scope: 'link' } })),
    ]);
  } catch (err) {
    throw ioFailure(`bringing up ${s.hostName} and routing ${s.addresses.map((a) => a.ip).join(', ')} to it`, err);
  }
}

/**
 * Generic-veth chaining: the previous plugin created `ifName` in the namespace; finds it and its
 * host-side veth peer (by the peer's ifindex).
 */
export async function findChainedLinks(net: NetOps, netns: string, ifName: string): Promise<PodLinks> {
  let pod: LinkInfo | undefined;
  try {
    pod = await net.inNetns(netns, (ops) => ops.getLink(ifName));
  } catch (err) {
    throw ioFailure(`looking up ${ifName} in ${netns}`, err);
  }
  if (!pod) throw new CniFailure(CniErrorCode.InvalidConfig, `invalid network configuration: prevResult names ${ifName} in ${netns}, but it does not exist there`);
  const peer = pod.peerIndex;
  const host = peer ? (await net.inHost((h) => h.listLinks())).find((l) => l.index === peer && l.kind === 'veth') : undefined;
  if (!host) {
    throw new CniFailure(CniErrorCode.InvalidConfig, `invalid network configuration: ${ifName} in ${netns} has no veth peer in the host namespace (chaining needs a veth created by the previous plugin)`);
  }
  return { host, pod };
}
