// An in-memory NetOps for the CNI server's unprivileged tests: namespaces holding links, addresses,
// routes, neighbours and sysctls, veth pairs across namespaces, and failure injection per operation
// and namespace (`fail('addRoute', 'pod')`), so every rollback path can be driven without root.
import type { LinkOps, NetOps } from '../../src/cells/cni-server/netops.js';
import type { NetnsProbe } from '../../src/netlink/index.js';
import type { AddressInfo, LinkInfo, NetlinkStep, RouteSpec, VethOptions } from '../../src/netlink/index.js';

interface FakeLink extends LinkInfo {
  addrs: string[];
  peer?: { ns: FakeNs; name: string };
}

/** One namespace. */
export class FakeNs {
  readonly links = new Map<string, FakeLink>();
  readonly routes: RouteSpec[] = [];
  readonly neighbors: Array<{ dev: string; ip: string; mac: string; permanent: boolean }> = [];
  readonly sysctls = new Map<string, string>();
  constructor(readonly path: string) {
    this.links.set('lo', link(1, 'lo', '', 65536, ''));
  }
}

let nextIndex = 100;
let nextMac = 1;
function link(index: number, name: string, mac: string, mtu: number, kind: string): FakeLink {
  return { index, name, mac, mtu, flags: 0, up: false, lowerUp: false, operState: 'down', kind, peerIndex: 0, masterIndex: 0, linkNetnsId: -1, addrs: [] };
}
function mac(): string {
  const n = nextMac++;
  return `02:00:00:00:${((n >> 8) & 0xff).toString(16).padStart(2, '0')}:${(n & 0xff).toString(16).padStart(2, '0')}`;
}
function errno(op: string, ifname: string, code: string): Error {
  return Object.assign(new Error(`${op} ${ifname}: ${code}`), { code, op, ifname });
}
/** The link `name` of ns, or ENODEV naming op. */
function need(ns: FakeNs, op: string, name: string): FakeLink {
  const l = ns.links.get(name);
  if (!l) throw errno(op, name, 'ENODEV');
  return l;
}
function copy(l: FakeLink): LinkInfo {
  const { addrs: _a, peer: _p, ...info } = l;
  return { ...info };
}

/** The fake. `calls` lists every operation as `op@ns`; `steps` every batch step applied, in order. */
export class FakeNet implements NetOps {
  readonly hostNs = new FakeNs('host');
  readonly namespaces = new Map<string, FakeNs>();
  readonly calls: string[] = [];
  readonly steps: NetlinkStep[] = [];
  private readonly failures = new Map<string, string>();
  closed = false;
  /** Paths the probe reports as something else than a namespace (`/etc/passwd` → 'a regular file'). */
  readonly files = new Map<string, string>();
  /** The path of "the agent's own" namespace, for the probe. */
  ownNetns = '/proc/self/ns/net';

  /** Creates a pod namespace. */
  addNetns(path: string): FakeNs {
    const ns = new FakeNs(path);
    this.namespaces.set(path, ns);
    return ns;
  }

  /** Makes `op` fail (in `where`: 'host', 'pod' or any) with errno `code` until cleared. */
  fail(op: string, where: 'host' | 'pod' | 'any' = 'any', code = 'EIO'): void {
    this.failures.set(`${op}@${where}`, code);
  }

  clearFailures(): void {
    this.failures.clear();
  }

  /** The host namespace's operations (for setting up scenarios). */
  host(): LinkOps {
    return this.ops(this.hostNs);
  }

  async inHost<T>(fn: (ops: LinkOps) => Promise<T>): Promise<T> {
    return fn(this.ops(this.hostNs));
  }

  async inNetns<T>(netnsPath: string, fn: (ops: LinkOps) => Promise<T>): Promise<T> {
    const ns = this.namespaces.get(netnsPath);
    if (!ns) throw errno('open', netnsPath, 'ENOENT');
    return fn(this.ops(ns));
  }

  /** Applies each step to the namespace, failing per op name as `fail` says (setUp, addAddress, addRoute, ...). */
  async applySteps(netnsPath: string | undefined, steps: readonly NetlinkStep[]): Promise<void> {
    const ns = netnsPath === undefined ? this.hostNs : this.namespaces.get(netnsPath);
    if (!ns) throw errno('applySteps', netnsPath!, 'ENOENT');
    for (const [i, s] of steps.entries()) {
      try {
        this.step(ns, s);
      } catch (err) {
        throw Object.assign(err as Error, { step: i });
      }
    }
  }

  /** The applied steps of one op. */
  stepsOf(op: NetlinkStep['op']): NetlinkStep[] {
    return this.steps.filter((s) => s.op === op);
  }

  private step(ns: FakeNs, s: NetlinkStep): void {
    this.steps.push(s);
    switch (s.op) {
      case 'setLink': {
        const { up, ...sizes } = s.change;
        const offload = ['gsoMaxSize', 'groMaxSize', 'gsoIpv4MaxSize', 'groIpv4MaxSize'];
        if (up === false || Object.keys(sizes).some((k) => !offload.includes(k))) throw new Error(`the fake only brings links up and sets offload sizes, not ${JSON.stringify(s.change)}`);
        this.check(up ? 'setUp' : 'setOffload', ns, s.name);
        const l = need(ns, up ? 'setUp' : 'setOffload', s.name);
        Object.assign(l, sizes);
        if (up) {
          l.up = true;
          l.flags |= 1;
        }
        return;
      }
      case 'addAddress': {
        this.check('addAddress', ns, s.dev);
        const l = need(ns, 'addAddress', s.dev);
        if (!l.addrs.includes(s.cidr)) l.addrs.push(s.cidr);
        return;
      }
      case 'addRoute':
        this.check('addRoute', ns, s.route.dev);
        if (s.route.dev) need(ns, 'addRoute', s.route.dev);
        ns.routes.push({ ...s.route });
        return;
      case 'addNeighbor':
        this.check('addNeighbor', ns, s.dev);
        need(ns, 'addNeighbor', s.dev);
        ns.neighbors.push({ dev: s.dev, ip: s.ip, mac: s.mac, permanent: s.permanent !== false });
        return;
      case 'writeSysctl':
        this.check('writeSysctl', ns, s.key);
        ns.sysctls.set(s.key, String(s.value));
    }
  }

  netnsExists(netnsPath: string): boolean {
    return this.namespaces.has(netnsPath);
  }

  /** A pod namespace of the fake, the agent's own (`ownNetns`), one of `files`, or missing. */
  async probeNetns(netnsPath: string): Promise<NetnsProbe> {
    if (netnsPath === this.ownNetns) return { kind: 'own', what: "this process's own network namespace", inode: 1 };
    if (this.namespaces.has(netnsPath)) return { kind: 'netns', what: 'a network namespace', inode: 2 };
    const what = this.files.get(netnsPath);
    return what ? { kind: 'other', what } : { kind: 'missing', what: 'does not exist' };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private check(op: string, ns: FakeNs, ifname = ''): void {
    const where = ns === this.hostNs ? 'host' : 'pod';
    this.calls.push(`${op}@${where}`);
    const code = this.failures.get(`${op}@${where}`) ?? this.failures.get(`${op}@any`);
    if (code) throw errno(op, ifname, code);
  }

  private ops(ns: FakeNs): LinkOps {
    const check = (op: string, ifname?: string): void => this.check(op, ns, ifname);
    const namespaces = this.namespaces;
    return {
      async createVeth(o: VethOptions) {
        check('createVeth', o.name);
        const peerNs = o.peerNetns ? namespaces.get(o.peerNetns) : ns;
        if (!peerNs) throw errno('createVeth', o.name, 'ENOENT');
        if (ns.links.has(o.name) || peerNs.links.has(o.peerName)) throw errno('createVeth', o.name, 'EEXIST');
        const a = link(nextIndex++, o.name, o.mac ?? mac(), o.mtu ?? 1500, 'veth');
        const b = link(nextIndex++, o.peerName, o.peerMac ?? mac(), o.mtu ?? 1500, 'veth');
        a.peerIndex = b.index;
        b.peerIndex = a.index;
        a.peer = { ns: peerNs, name: o.peerName };
        b.peer = { ns, name: o.name };
        ns.links.set(o.name, a);
        peerNs.links.set(o.peerName, b);
        return copy(a);
      },
      async getLink(name) {
        check('getLink', name);
        const l = ns.links.get(name);
        return l ? copy(l) : undefined;
      },
      async listLinks() {
        check('listLinks');
        return [...ns.links.values()].map(copy);
      },
      async deleteLink(name) {
        check('deleteLink', name);
        const l = ns.links.get(name);
        if (!l) return false;
        ns.links.delete(name);
        for (let i = ns.routes.length - 1; i >= 0; i--) if (ns.routes[i]!.dev === name) ns.routes.splice(i, 1);
        if (l.peer) {
          l.peer.ns.links.delete(l.peer.name);
          const r = l.peer.ns.routes;
          for (let i = r.length - 1; i >= 0; i--) if (r[i]!.dev === l.peer.name) r.splice(i, 1);
        }
        return true;
      },
      async listAddresses(dev) {
        check('listAddresses', dev);
        const links = dev ? [need(ns, 'listAddresses', dev)] : [...ns.links.values()];
        return links.flatMap((l) =>
          l.addrs.map((c): AddressInfo => {
            const [address, len] = c.split('/');
            return { family: address!.includes(':') ? 6 : 4, index: l.index, address: address!, prefixLength: Number(len), scope: 0, flags: 0x80, label: l.name };
          }),
        );
      },
    };
  }
}
