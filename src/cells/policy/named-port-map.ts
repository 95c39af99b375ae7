/**
 * The node's named-port map (Cilium's NamedPortMultiMap, kept by its ipcache): for every endpoint
 * this node knows (its own, and those of other nodes when their CiliumEndpoints are watched), the
 * security identity, the named container ports and the addresses (what a Kubernetes ipBlock needs
 * to select pods by address: `addresses(identity)`, `onAddresses`). An egress rule's named port resolves against
 * it: to a peer identity, the numbers its endpoints declare under that name and protocol; to the
 * wildcard peer (identity 0), the numbers any endpoint declares (Cilium's wildcard semantics).
 * Endpoints of one identity that declare different numbers for one name all count (the union:
 * Kubernetes does not make them agree, Cilium does the same). A name nobody declares resolves to
 * nothing. Every change reports the names whose resolution it may have changed, so the policy
 * repository recomputes the endpoints whose egress rules use them. Until every source registered
 * with `pending` has listed, the map is not `complete`: endpoints may be missing, so a deny by name
 * denies every port of its protocol meanwhile (fail closed; distill.ts).
 */
import type { NamedPort, NamedPortMap as NamedPortMapContract } from './types.js';

/** What one owner (an endpoint) contributes. */
interface Owned {
  readonly identity: number;
  readonly ports: readonly NamedPort[];
  readonly addresses?: readonly string[];
}

/** What an address change concerns: the identities whose address set changed, and the addresses that came or went. */
export interface AddressChange {
  readonly identities: ReadonlySet<number>;
  readonly addresses: ReadonlySet<string>;
}

/** Called with the names whose resolution a change may have changed (never empty; 'all': every name). */
export type NamedPortListener = (names: ReadonlySet<string> | 'all') => void;

/** See the module comment. */
export class NamedPortMultiMap implements NamedPortMapContract {
  private readonly owners = new Map<string, Owned>();
  /** name -> owner -> that owner's ports of the name. */
  private readonly byName = new Map<string, Map<string, Owned>>();
  private readonly listeners: NamedPortListener[] = [];
  private readonly addressListeners: ((c: AddressChange) => void)[] = [];
  /** identity -> owner -> that owner's addresses. */
  private readonly byIdentity = new Map<number, Map<string, readonly string[]>>();
  /** address -> how many owners have it. */
  private readonly owned = new Map<string, number>();
  private readonly waiting = new Set<string>();
  private seq = 0;

  /** See NamedPortMap. */
  get complete(): boolean {
    return this.waiting.size === 0;
  }

  /** See NamedPortMap: `done` is idempotent; the last one reports 'all'. */
  pending(source: string): () => void {
    const key = `${source}#${++this.seq}`;
    this.waiting.add(key);
    return () => {
      if (!this.waiting.delete(key) || this.waiting.size) return;
      for (const fn of this.listeners) fn('all');
      const identities = new Set(this.byIdentity.keys());
      if (identities.size) for (const fn of this.addressListeners) fn({ identities, addresses: new Set() });
    };
  }

  /** Registers a listener for changes (called synchronously, inside `upsert`/`remove`). */
  onChange(fn: NamedPortListener): void {
    this.listeners.push(fn);
  }

  /** Registers a listener for address changes (called synchronously, inside `upsert`/`remove`, after the names'). */
  onAddresses(fn: (c: AddressChange) => void): void {
    this.addressListeners.push(fn);
  }

  /**
   * Every address the endpoints of `identity` have (sorted), or undefined when the map knows no
   * address of it. While the map is not `complete`, other nodes' endpoints may be missing.
   */
  addresses(identity: number): readonly string[] | undefined {
    const owners = this.byIdentity.get(identity);
    if (!owners) return undefined;
    return [...new Set([...owners.values()].flat())].sort();
  }

  /** Whether some endpoint the map knows has `address`. */
  hasAddress(address: string): boolean {
    return this.owned.has(address);
  }

  /**
   * Sets what `owner` (e.g. `endpoint:12`, `cep:ns/name`) contributes: its identity, named ports
   * and addresses. Reports the names that changed, then the identities and addresses; an
   * identical call changes nothing and reports nothing.
   */
  upsert(owner: string, identity: number, ports: readonly NamedPort[], addresses: readonly string[] = []): void {
    const before = this.owners.get(owner);
    const next: Owned = { identity, ports: [...ports].sort(comparePorts), addresses: [...new Set(addresses)].sort() };
    const sameAddresses = before !== undefined && before.identity === identity && sameList(before.addresses ?? [], next.addresses ?? []);
    if (before && before.identity === identity && samePorts(before.ports, next.ports) && sameAddresses) return;
    const changed = new Set<string>();
    if (before) this.unindex(owner, before, changed);
    const addressChange = sameAddresses ? undefined : this.reindexAddresses(owner, before, next);
    this.owners.set(owner, next);
    for (const name of new Set(next.ports.map((p) => p.name))) {
      let owned = this.byName.get(name);
      if (!owned) this.byName.set(name, (owned = new Map()));
      owned.set(owner, { identity, ports: next.ports.filter((p) => p.name === name) });
      changed.add(name);
    }
    this.emit(changed);
    if (addressChange) this.emitAddresses(addressChange);
  }

  /** Removes what `owner` contributed (an endpoint deleted, a CiliumEndpoint gone). */
  remove(owner: string): void {
    const before = this.owners.get(owner);
    if (!before) return;
    const changed = new Set<string>();
    this.unindex(owner, before, changed);
    const addressChange = this.reindexAddresses(owner, before, undefined);
    this.owners.delete(owner);
    this.emit(changed);
    this.emitAddresses(addressChange);
  }

  /** Moves `owner`'s addresses from `before` to `next` in the indexes; what changed. */
  private reindexAddresses(owner: string, before: Owned | undefined, next: Owned | undefined): AddressChange {
    const identities = new Set<number>();
    const addresses = new Set<string>();
    if (before) {
      const owners = this.byIdentity.get(before.identity);
      if (owners?.delete(owner)) identities.add(before.identity);
      if (owners?.size === 0) this.byIdentity.delete(before.identity);
      for (const a of before.addresses ?? []) {
        const n = (this.owned.get(a) ?? 0) - 1;
        if (n > 0) this.owned.set(a, n);
        else {
          this.owned.delete(a);
          addresses.add(a);
        }
      }
    }
    if (next?.addresses?.length) {
      let owners = this.byIdentity.get(next.identity);
      if (!owners) this.byIdentity.set(next.identity, (owners = new Map()));
      owners.set(owner, next.addresses);
      identities.add(next.identity);
      for (const a of next.addresses) {
        const n = this.owned.get(a) ?? 0;
        this.owned.set(a, n + 1);
        if (n === 0 && !addresses.delete(a)) addresses.add(a);
      }
    }
    return { identities, addresses };
  }

  private emitAddresses(c: AddressChange): void {
    if (c.identities.size === 0 && c.addresses.size === 0) return;
    for (const fn of this.addressListeners) fn(c);
  }

  /**
   * The numbers `name` stands for, for `protocol`, at peer `identity` (0: at any endpoint), sorted
   * and without duplicates; empty when nobody declares it.
   */
  ports(name: string, protocol: number, identity: number): number[] {
    const owned = this.byName.get(name);
    if (!owned) return [];
    const out = new Set<number>();
    for (const o of owned.values()) {
      if (identity !== 0 && o.identity !== identity) continue;
      for (const p of o.ports) if (p.protocol === protocol) out.add(p.port);
    }
    return [...out].sort((a, b) => a - b);
  }

  /** How many owners contribute (for status and tests). */
  get size(): number {
    return this.owners.size;
  }

  private unindex(owner: string, before: Owned, changed: Set<string>): void {
    for (const name of new Set(before.ports.map((p) => p.name))) {
      const owned = this.byName.get(name);
      owned?.delete(owner);
      if (owned?.size === 0) this.byName.delete(name);
      changed.add(name);
    }
  }

  private emit(changed: Set<string>): void {
    if (changed.size === 0) return;
    for (const fn of this.listeners) fn(changed);
  }
}

function comparePorts(a: NamedPort, b: NamedPort): number {
  return a.name.localeCompare(b.name) || a.protocol - b.protocol || a.port - b.port;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function samePorts(a: readonly NamedPort[], b: readonly NamedPort[]): boolean {
  return a.length === b.length && a.every((p, i) => p.name === b[i]!.name && p.port === b[i]!.port && p.protocol === b[i]!.protocol);
}
