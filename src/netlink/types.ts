/** Typed results and arguments of the netlink module (see netlink.ts for the operations). */

/** RFC 2863 operational state of a link (IFLA_OPERSTATE). */
export type OperState = 'unknown' | 'notpresent' | 'down' | 'lowerlayerdown' | 'testing' | 'dormant' | 'up';

/** Route and address scopes by name (rtnetlink RT_SCOPE_*). */
export const SCOPES = { universe: 0, site: 200, link: 253, host: 254, nowhere: 255 } as const;

/** A scope name, or the raw RT_SCOPE_* number. */
export type Scope = keyof typeof SCOPES | number;

/**
 * A link's GSO/GRO maximums (BIG TCP), each absent when the kernel does not know it:
 * IFLA_GSO_MAX_SIZE, IFLA_GRO_MAX_SIZE (5.19), IFLA_TSO_MAX_SIZE (read-only, 5.19),
 * IFLA_GSO_IPV4_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE (6.3).
 */
export interface OffloadSizes {
  readonly gsoMaxSize?: number;
  readonly groMaxSize?: number;
  readonly tsoMaxSize?: number;
  readonly gsoIpv4MaxSize?: number;
  readonly groIpv4MaxSize?: number;
}

/** The keys of {@link OffloadSizes}. */
export const OFFLOAD_SIZE_KEYS = ['gsoMaxSize', 'groMaxSize', 'tsoMaxSize', 'gsoIpv4MaxSize', 'groIpv4MaxSize'] as const;

/** A network interface as the kernel reports it. */
export interface LinkInfo extends OffloadSizes {
  /** Interface index (unique within its network namespace). */
  index: number;
  name: string;
  /** Hardware address `aa:bb:cc:dd:ee:ff` ("" when the link has none). */
  mac: string;
  mtu: number;
  /** IFF_* flags. */
  flags: number;
  /** IFF_UP: administratively up. */
  up: boolean;
  /** IFF_LOWER_UP: the carrier is present (for a veth: the peer is up too). */
  lowerUp: boolean;
  operState: OperState;
  /** Link kind from IFLA_INFO_KIND (`veth`, `bridge`, …; "" for loopback and physical devices). */
  kind: string;
  /** IFLA_LINK: for a veth, the peer's ifindex in the peer's namespace; 0 when none. */
  peerIndex: number;
  /** Index of the master device (bridge, bond); 0 when none. */
  masterIndex: number;
  /** IFLA_LINK_NETNSID: the peer's namespace id as seen from here; -1 when the same namespace. */
  linkNetnsId: number;
}

/** An IP address on an interface. */
export interface AddressInfo {
  family: 4 | 6;
  /** Index of the interface holding it. */
  index: number;
  address: string;
  prefixLength: number;
  /** RT_SCOPE_* number (0 universe, 253 link, 254 host). */
  scope: number;
  /** IFA_F_* flags (e.g. 0x80 permanent, 0x02 nodad). */
  flags: number;
  label: string;
}

/** A route of a routing table. */
export interface RouteInfo {
  family: 4 | 6;
  /** Destination as CIDR; the default route is `0.0.0.0/0` or `::/0`. */
  dst: string;
  gateway?: string;
  /** Preferred source address. */
  src?: string;
  /** Outgoing interface index (0 when none). */
  ifindex: number;
  scope: number;
  /** RTPROT_* (2 kernel, 3 boot, 4 static). */
  protocol: number;
  /** RTN_* (1 unicast, 2 local, …). */
  type: number;
  table: number;
  /** RTNH_F_ONLINK: the gateway is taken as directly reachable on the interface. */
  onlink: boolean;
  /** Metric (0 when unset). */
  priority: number;
}

/** A neighbour (ARP / NDP) entry. */
export interface NeighborInfo {
  family: 4 | 6;
  index: number;
  address: string;
  mac: string;
  /** NUD_* state bits. */
  state: number;
  /** NUD_PERMANENT: a static entry. */
  permanent: boolean;
}

/** A veth pair to create. */
export interface VethOptions {
  /** The side that stays in the handle's namespace (e.g. `lxc1a2b3c`). */
  name: string;
  /** The other side's name, already final in its namespace (e.g. `eth0`). */
  peerName: string;
  /** MTU of both sides (kernel default when omitted). */
  mtu?: number;
  /** Create the peer directly inside this network namespace (a path such as /var/run/netns/x). */
  peerNetns?: string;
  mac?: string;
  peerMac?: string;
}

/** Changes to a link; fields left out stay as they are. */
export interface LinkChange {
  up?: boolean;
  mtu?: number;
  mac?: string;
  /** Rename (to this name in the target namespace when moving). */
  name?: string;
  /** Move the link into this network namespace (a path such as /proc/PID/ns/net). */
  netns?: string;
  /** IFLA_GSO_MAX_SIZE / IFLA_GRO_MAX_SIZE (IPv6 BIG TCP; the legacy limit for both families). */
  gsoMaxSize?: number;
  groMaxSize?: number;
  /** IFLA_GSO_IPV4_MAX_SIZE / IFLA_GRO_IPV4_MAX_SIZE (IPv4 BIG TCP, kernels >= 6.3; ignored by older ones). */
  gsoIpv4MaxSize?: number;
  groIpv4MaxSize?: number;
}

/** A route to add or delete. */
export interface RouteSpec {
  /** CIDR, a bare address (host route), or `default` (IPv4, or IPv6 when the gateway is IPv6). */
  dst: string;
  gateway?: string;
  /** Outgoing interface name. */
  dev?: string;
  /** Preferred source address. */
  src?: string;
  /** Default: `link` without a gateway, `universe` with one (as `ip route` does). */
  scope?: Scope;
  /** Treat the gateway as directly reachable on dev even though no prefix covers it. */
  onlink?: boolean;
  /** Routing table (default 254, main). */
  table?: number;
  priority?: number;
  mtu?: number;
}
