/**
 * rtnetlink without spawning `ip`: a {@link Netlink} handle owns one NETLINK_ROUTE socket, in the
 * agent's network namespace or, with {@link Netlink.open}(path), inside another one (the socket is
 * created there by a short-lived native thread; no Node thread ever calls setns). Every operation
 * runs on a libuv worker thread and resolves with typed results; failures reject with
 * {@link NetlinkError} naming the operation, the interface and the errno.
 */
import { invalidArgument, toNetlinkError } from './errors.js';
import { loadAddon, type RawHandle, type RawLink } from './native.js';
import { rawRoute } from './route-spec.js';
import {
  type AddressInfo,
  type LinkChange,
  type LinkInfo,
  type NeighborInfo,
  OFFLOAD_SIZE_KEYS,
  type OffloadSizes,
  type OperState,
  type RouteInfo,
  type RouteSpec,
  type VethOptions,
} from './types.js';

const IFF_UP = 0x1;
const IFF_LOWER_UP = 0x10000;
const RTNH_F_ONLINK = 0x4;
/** rtm_type of a route to an address of this host. */
const RTN_LOCAL = 2;
const NUD_PERMANENT = 0x80;
const OPER_STATES: OperState[] = ['unknown', 'notpresent', 'down', 'lowerlayerdown', 'testing', 'dormant', 'up'];

/** The GSO/GRO/TSO maximums the kernel reported (each left out when it did not). */
function offloadSizes(raw: RawLink): OffloadSizes {
  const out: { -readonly [K in keyof OffloadSizes]: number } = {};
  for (const k of OFFLOAD_SIZE_KEYS) if (raw[k] !== undefined) out[k] = raw[k];
  return out;
}

function toLink(raw: RawLink): LinkInfo {
  return {
    index: raw.index,
    name: raw.name,
    mac: raw.mac,
    mtu: raw.mtu,
    flags: raw.flags,
    up: (raw.flags & IFF_UP) !== 0,
    lowerUp: (raw.flags & IFF_LOWER_UP) !== 0,
    operState: OPER_STATES[raw.operstate] ?? 'unknown',
    kind: raw.kind,
    peerIndex: raw.parent,
    masterIndex: raw.master,
    linkNetnsId: raw.linkNetnsId,
    ...offloadSizes(raw),
  };
}

/** A NETLINK_ROUTE socket in one network namespace, with the operations the CNI needs. */
export class Netlink {
  private constructor(
    private readonly raw: RawHandle,
    /** The namespace path given to {@link Netlink.open}, undefined for the agent's own namespace. */
    readonly netns: string | undefined,
  ) {}

  /**
   * Opens a handle in the agent's network namespace, or inside the namespace at netnsPath
   * (e.g. /var/run/netns/x or /proc/PID/ns/net). Synchronous: it only opens a socket.
   */
  static open(netnsPath?: string): Netlink {
    const { NetlinkHandle } = loadAddon();
    try {
      return new Netlink(netnsPath === undefined ? new NetlinkHandle() : new NetlinkHandle(netnsPath), netnsPath);
    } catch (err) {
      throw toNetlinkError(err);
    }
  }

  private async call<T>(p: () => Promise<T>): Promise<T> {
    try {
      return await p();
    } catch (err) {
      throw toNetlinkError(err);
    }
  }

  /**
   * Creates a veth pair in one request; with `peerNetns` the peer is created directly inside that
   * namespace under its final name (no rename, no name clash on the host). Resolves with the local side.
   */
  async createVeth(opts: VethOptions): Promise<LinkInfo> {
    const echoed = await this.call(() =>
      this.raw.createVeth(opts.name, opts.peerName, opts.mtu ?? 0, opts.peerNetns ?? '', opts.mac ?? '', opts.peerMac ?? ''),
    );
    if (echoed) return toLink(echoed);
    const link = await this.getLink(opts.name); // a kernel before 6.3 does not echo the new link
    if (!link) throw invalidArgument('createVeth', opts.name, 'the veth vanished right after its creation');
    return link;
  }

  /** Applies several link changes in one request (up/down, MTU, MAC, rename, namespace move). */
  async setLink(name: string, change: LinkChange): Promise<void> {
    await this.call(() => this.raw.setLink(name, change));
  }

  /** Sets the link administratively up. */
  async setUp(name: string): Promise<void> {
    await this.setLink(name, { up: true });
  }

  /** Sets the link administratively down. */
  async setDown(name: string): Promise<void> {
    await this.setLink(name, { up: false });
  }

  /** Sets the link's MTU. */
  async setMtu(name: string, mtu: number): Promise<void> {
    await this.setLink(name, { mtu });
  }

  /** Moves the link into the namespace at netnsPath, renaming it there to newName when given. */
  async moveToNetns(name: string, netnsPath: string, newName?: string): Promise<void> {
    await this.setLink(name, newName === undefined ? { netns: netnsPath } : { netns: netnsPath, name: newName });
  }

  /** The link called name in this handle's namespace, or undefined when there is none. */
  async getLink(name: string): Promise<LinkInfo | undefined> {
    const raw = await this.call(() => this.raw.getLink(name));
    return raw ? toLink(raw) : undefined;
  }

  /** Every link of this handle's namespace. */
  async listLinks(): Promise<LinkInfo[]> {
    return (await this.call(() => this.raw.listLinks())).map(toLink);
  }

  /** Deletes the link (a veth takes its peer with it); false when it did not exist. */
  async deleteLink(name: string): Promise<boolean> {
    return this.call(() => this.raw.deleteLink(name));
  }

  /** Adds (or replaces) an address given as CIDR; `noDad` skips IPv6 duplicate address detection. */
  async addAddress(dev: string, cidr: string, opts: { noDad?: boolean } = {}): Promise<void> {
    await this.call(() => this.raw.addAddress(dev, cidr, opts.noDad ?? false));
  }

  /** Removes an address given as CIDR; false when the interface did not hold it. */
  async deleteAddress(dev: string, cidr: string): Promise<boolean> {
    return this.call(() => this.raw.deleteAddress(dev, cidr));
  }

  /** The addresses of dev, or of every interface when dev is omitted. */
  async listAddresses(dev?: string): Promise<AddressInfo[]> {
    return this.call(() => this.raw.listAddresses(dev ?? ''));
  }

  /** Adds (or replaces) a route: e.g. `{ dst: 'default', gateway, dev, onlink: true }`, or a host route `{ dst: ip, dev }`. */
  async addRoute(spec: RouteSpec): Promise<void> {
    const route = rawRoute(spec, 'addRoute');
    await this.call(() => this.raw.addRoute(route));
  }

  /** Deletes a route; false when there was no such route. */
  async deleteRoute(spec: RouteSpec): Promise<boolean> {
    const route = rawRoute(spec, 'deleteRoute');
    return this.call(() => this.raw.deleteRoute(route));
  }

  /**
   * Whether `ip` is an address of this host in the handle's namespace: the kernel's route to it is
   * a local one (RTM_GETROUTE for that one address, whatever the number of interfaces and routes).
   */
  async isLocalAddress(ip: string): Promise<boolean> {
    return (await this.call(() => this.raw.routeType(ip))) === RTN_LOCAL;
  }

  /**
   * isLocalAddress answered on the calling thread: the kernel answers a route lookup of one address
   * without its rtnl lock, within the send (a few µs), which costs the event loop less than a
   * worker's round trip (one per endpoint regeneration).
   */
  isLocalAddressNow(ip: string): boolean {
    try {
      return this.raw.routeTypeSync(ip) === RTN_LOCAL;
    } catch (err) {
      throw toNetlinkError(err);
    }
  }

  /** Routes of one table (default main, 254; 0 for all tables), of one family or both. */
  async listRoutes(opts: { family?: 4 | 6; table?: number } = {}): Promise<RouteInfo[]> {
    const raw = await this.call(() => this.raw.listRoutes(opts.family ?? 0, opts.table ?? 254));
    return raw.map((r) => ({
      family: r.family,
      dst: r.dst,
      ...(r.gateway ? { gateway: r.gateway } : {}),
      ...(r.src ? { src: r.src } : {}),
      ifindex: r.oif,
      scope: r.scope,
      protocol: r.protocol,
      type: r.type,
      table: r.table,
      onlink: (r.flags & RTNH_F_ONLINK) !== 0,
      priority: r.priority,
    }));
  }

  /** Adds (or replaces) a neighbour entry, permanent unless `permanent: false` (then reachable). */
  async addNeighbor(dev: string, ip: string, mac: string, opts: { permanent?: boolean } = {}): Promise<void> {
    const { nud } = loadAddon();
    await this.call(() => this.raw.addNeighbor(dev, ip, mac, opts.permanent === false ? nud.reachable : nud.permanent));
  }

  /** The neighbour entries of dev, or of every interface when dev is omitted. */
  async listNeighbors(dev?: string): Promise<NeighborInfo[]> {
    const raw = await this.call(() => this.raw.listNeighbors(dev ?? ''));
    return raw.map((n) => ({ ...n, permanent: (n.state & NUD_PERMANENT) !== 0 }));
  }

  /**
   * Writes a sysctl as seen from this handle's namespace (per-namespace keys such as
   * `net.ipv4.conf.eth0.rp_filter` or `net/ipv6/conf/eth0/disable_ipv6`); see {@link sysctlPath}.
   */
  async writeSysctl(key: string, value: string | number): Promise<void> {
    await this.call(() => this.raw.writeSysctl(sysctlPath(key), String(value)));
  }

  /** Reads a sysctl as seen from this handle's namespace (trailing newline removed). */
  async readSysctl(key: string): Promise<string> {
    return this.call(() => this.raw.readSysctl(sysctlPath(key)));
  }

  /** Closes the socket; later calls reject with EBADF. */
  async close(): Promise<void> {
    await this.call(() => this.raw.close());
  }
}

/** A running {@link watchAddresses}. */
export interface AddressWatch {
  /** Stops the watch; no onChange comes after. */
  close(): void;
}

/**
 * Calls `onChange` whenever a link, an IPv4/IPv6 address or a route of the agent's network
 * namespace comes, goes or changes (rtnetlink notifications on Node's event loop, no thread, never keeping the
 * process alive); one call per burst, and one when notifications were lost, so the caller lists
 * what it needs again. `onChange` must not throw (an exception would be uncaught).
 */
export function watchAddresses(onChange: () => void): AddressWatch {
  const { AddressWatch: Watch } = loadAddon();
  try {
    return new Watch(onChange);
  } catch (err) {
    throw toNetlinkError(err);
  }
}

/**
 * The path below /proc/sys of a sysctl key: a dotted key (`net.ipv4.ip_forward`) has its dots
 * turned into slashes; a key already containing `/` is used as it is (needed when an interface name
 * contains a dot, e.g. `net/ipv4/conf/eth0.100/forwarding`).
 */
export function sysctlPath(key: string): string {
  return key.includes('/') ? key.replace(/^\/proc\/sys\//, '') : key.replaceAll('.', '/');
}

/**
 * Runs fn with a handle opened in the namespace at netnsPath (the agent's own when undefined) and
 * closes it afterwards, whatever fn does: the way to run a batch of operations inside a netns.
 */
export async function withNetlink<T>(netnsPath: string | undefined, fn: (nl: Netlink) => Promise<T>): Promise<T> {
  const nl = Netlink.open(netnsPath);
  try {
    return await fn(nl);
  } finally {
    await nl.close();
  }
}
