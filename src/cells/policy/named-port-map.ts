/**
 * The node's named-port map (Cilium's NamedPortMultiMap, kept by its ipcache): for every endpoint
 * this node knows (its own, and those of other nodes when their CiliumEndpoints are watched), the
 * security identity and the named container ports. An egress rule's named port resolves against
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
}

/** Called with the names whose resolution a change may have changed (never empty; 'all': every name). */
export type NamedPortListener = (names: ReadonlySet<string> | 'all') => void;

/** See the module comment. */
export class NamedPortMultiMap implements NamedPortMapContract {
  private readonly owners = new Map<string, Owned>();
  /** name -> owner -> that owner's ports of the name. */
  private readonly byName = new Map<string, Map<string, Owned>>();
  private readonly listeners: NamedPortListener[] = [];
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
    };
  }

  /** Registers a listener for changes (called synchronously, inside `upsert`/`remove`). */
  onChange(fn: NamedPortListener): void {
    this.listeners.push(fn);
  }

  /**
   * Sets what `owner` (e.g. `endpoint:12`, `cep:ns/name`) contributes: its identity and named
   * ports. Reports the names that changed; an identical call changes nothing and reports nothing.
   */
  upsert(owner: string, identity: number, ports: readonly NamedPort[]): void {
    const before = this.owners.get(owner);
    const next: Owned = { identity, ports: [...ports].sort(comparePorts) };
    if (before && before.identity === identity && samePorts(before.ports, next.ports)) return;
    const changed = new Set<string>();
    if (before) this.unindex(owner, before, changed);
    this.owners.set(owner, next);
    for (const name of new Set(next.ports.map((p) => p.name))) {
      let owned = this.byName.get(name);
      if (!owned) this.byName.set(name, (owned = new Map()));
      owned.set(owner, { identity, ports: next.ports.filter((p) => p.name === name) });
      changed.add(name);
    }
    this.emit(changed);
  }

  /** Removes what `owner` contributed (an endpoint deleted, a CiliumEndpoint gone). */
  remove(owner: string): void {
    const before = this.owners.get(owner);
    if (!before) return;
    const changed = new Set<string>();
    this.unindex(owner, before, changed);
    this.owners.delete(owner);
    this.emit(changed);
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

function samePorts(a: readonly NamedPort[], b: readonly NamedPort[]): boolean {
  return a.length === b.length && a.every((p, i) => p.name === b[i]!.name && p.port === b[i]!.port && p.protocol === b[i]!.protocol);
}
