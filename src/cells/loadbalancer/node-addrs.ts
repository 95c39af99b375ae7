/**
 * The node's own addresses, which no ClusterIP, ExternalIPs, LoadBalancer or LocalRedirect
 * frontend may take (socket LB would send every host process's connect to such an address:port to
 * the service's backends, CVE-2020-8554's class): every address of every interface in the agent's
 * network namespace (listed over rtnetlink, IPv6 link-local ones included, kept current by
 * {@link NodeAddresses.refresh}), every address of a `local` route of the local table (a whole
 * prefix the node accepts as its own: `ip route add local 10.5.0.0/16 dev lo`, AnyIP), the pod
 * gateway address of each IPAM pool, and the address the
 * agent's API listens on (--api-listen-address). The API's own host:port is no backend either.
 * The cell relists on every rtnetlink notification (src/netlink watchAddresses) and periodically.
 */
import { Subject, type Observable } from 'rxjs';
import { canonicalAddr, cidrContainsAddr, formatAddr, parseAddr, parseCidr, type Cidr } from '../../lib/addr.js';
import { specialRange } from '../../lib/special-addr.js';

/** What the service manager asks of the node's addresses; each answer is why, or undefined. */
export interface NodeAddressCheck {
  /** Why the canonical `ip` is one of the node's own addresses (no frontend but NodePort may take it). */
  frontend(ip: string): string | undefined;
  /** Why `ip:port` is the agent itself (no backend may be). */
  backend(ip: string, port: number): string | undefined;
  /** Emits whenever the node's addresses changed. */
  readonly changes$: Observable<void>;
}

/** An address of an interface. */
export interface InterfaceAddress {
  readonly ip: string;
  /** The interface's name (its index when the name is unknown). */
  readonly dev: string;
}

/** A route of type local (RTN_LOCAL) of the local table: every address of `cidr` is the node's. */
export interface LocalRoute {
  readonly cidr: string;
  readonly dev: string;
}

/** A pod address pool with its gateway. */
export interface PodGateway {
  readonly gateway: string;
  readonly cidr: string;
}

/** Where the node's addresses come from. */
export interface NodeAddressSources {
  /** Every address of every interface of the agent's network namespace. */
  readonly interfaces: () => Promise<readonly InterfaceAddress[]>;
  /** The local routes of the agent's network namespace (each interface address has one too). */
  readonly localRoutes?: () => Promise<readonly LocalRoute[]>;
  /** The pod pools' gateways. */
  readonly gateways: () => readonly PodGateway[];
  /** --api-listen-address as given (`host:port`), parsed; undefined when the API has no TCP listener. */
  readonly api?: { readonly raw: string; readonly host: string; readonly port: number };
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d, canonical ::ffff:abb:3201) stands for, else the address itself. */
export function unmapped(ip: string): string {
  if (!/^::ffff:/i.test(ip)) return ip;
  const a = parseAddr(ip);
  return a?.family === 'ipv6' && a.value >> 32n === 0xffffn ? formatAddr('ipv4', a.value) : ip;
}

/** The node's addresses, as last listed. */
export class NodeAddresses implements NodeAddressCheck {
  private ifaces = new Map<string, string>();
  /** The gateways as the last listing saw them (a change of them is a change of the node's addresses). */
  private gateways = new Map<string, string>();
  /** The gateways now, read once per turn of the event loop (a pool can be set after a listing). */
  private liveGateways?: Map<string, string>;
  /** Local routes wider than one address, by their CIDR text. */
  private prefixes = new Map<string, { cidr: Cidr; dev: string }>();
  private readonly apiHost: string | undefined;
  private readonly subject = new Subject<void>();
  private running?: Promise<boolean>;
  private again = false;
  readonly changes$: Observable<void> = this.subject.asObservable();

  constructor(private readonly src: NodeAddressSources) {
    // a host name (localhost) is no address: its port is then checked on every address of the node
    this.apiHost = src.api ? canonicalAddr(src.api.host) : undefined;
  }

  /**
   * Lists the addresses again; emits on changes$ and resolves true when they changed. Calls while
   * one runs share it, and it lists once more after (a change may have come during its listing).
   */
  refresh(): Promise<boolean> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = async (): Promise<boolean> => {
      let changed = false;
      try {
        do {
          this.again = false;
          changed = (await this.listOnce()) || changed;
        } while (this.again);
      } finally {
        this.running = undefined;
      }
      return changed;
    };
    return (this.running = run());
  }

  private async listOnce(): Promise<boolean> {
    const listed = await this.src.interfaces();
    const prefixes = new Map<string, { cidr: Cidr; dev: string }>();
    for (const r of (await this.src.localRoutes?.()) ?? []) {
      const cidr = parseCidr(r.cidr);
      if (cidr.prefix < cidr.bits) prefixes.set(r.cidr, { cidr, dev: r.dev });
    }
    const ifaces = new Map<string, string>();
    for (const a of listed) {
      const ip = canonicalAddr(a.ip);
      if (ip && !ifaces.has(ip)) ifaces.set(ip, a.dev);
    }
    this.liveGateways = undefined;
    const gateways = this.currentGateways();
    const routes = (m: ReadonlyMap<string, { dev: string }>): Map<string, string> => new Map([...m].map(([k, v]) => [k, v.dev]));
    const changed = !sameMap(ifaces, this.ifaces) || !sameMap(gateways, this.gateways) || !sameMap(routes(prefixes), routes(this.prefixes));
    this.ifaces = ifaces;
    this.gateways = gateways;
    this.prefixes = prefixes;
    if (changed) this.subject.next();
    return changed;
  }

  /** The interface addresses as last listed (canonical IP -> interface). */
  interfaceAddresses(): ReadonlyMap<string, string> {
    return this.ifaces;
  }

  frontend(ip: string): string | undefined {
    const a = unmapped(ip);
    const dev = this.ifaces.get(a);
    if (dev !== undefined) return `it is an address of the node (interface ${dev})`;
    const local = this.localPrefix(a);
    if (local) return local;
    const pool = this.currentGateways().get(a);
    if (pool !== undefined) return `it is the pods' gateway address (pool ${pool})`;
    if (this.apiHost && this.apiHost === a && specialRange(a)?.use !== 'unspecified') return `it is the address the agent's API listens on (--api-listen-address ${this.src.api!.raw})`;
    return undefined;
  }

  /** The pod pools' gateways (canonical IP -> pool), read from the source at most once per turn of the event loop. */
  private currentGateways(): Map<string, string> {
    if (this.liveGateways) return this.liveGateways;
    const gateways = new Map<string, string>();
    for (const g of this.src.gateways()) {
      const ip = canonicalAddr(g.gateway);
      if (ip) gateways.set(ip, g.cidr);
    }
    this.liveGateways = gateways;
    setImmediate(() => {
      if (this.liveGateways === gateways) this.liveGateways = undefined;
    });
    return gateways;
  }

  /** Why `ip` (canonical, unmapped) is in a local route wider than one address, or undefined. */
  private localPrefix(ip: string): string | undefined {
    if (!this.prefixes.size) return undefined;
    const addr = parseAddr(ip);
    if (!addr) return undefined;
    for (const [text, r] of this.prefixes) if (cidrContainsAddr(r.cidr, addr)) return `it is in a local route of the node (local ${text} dev ${r.dev})`;
    return undefined;
  }

  backend(ip: string, port: number): string | undefined {
    const api = this.src.api;
    if (!api || port !== api.port) return undefined;
    const a = unmapped(ip);
    const use = specialRange(a)?.use;
    // a listener on a given address is reached there only; one on every address (or a host name)
    // through loopback and every address of the node
    const specific = this.apiHost !== undefined && specialRange(this.apiHost)?.use !== 'unspecified';
    const reaches = specific ? a === this.apiHost : use === 'loopback' || use === 'unspecified' || this.ifaces.has(a) || this.currentGateways().has(a) || this.localPrefix(a) !== undefined;
    return reaches ? `it is the agent's own API (--api-listen-address ${api.raw})` : undefined;
  }
}

function sameMap(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}
