/**
 * What every node registry keeps: the known nodes by name (this one included), their events, and
 * Cilium's local node IDs (1.. per agent in the order nodes became known, stable while it runs).
 */
import { Subject } from 'rxjs';
import type { ClusterNode, NodeEvent, NodeRegistry } from './types.js';

/** The nodes one registry knows; registries extend it and feed it. */
export abstract class NodeTable implements NodeRegistry {
  private readonly nodes = new Map<string, ClusterNode>();
  private readonly ids = new Map<string, number>();
  private nextId = 1;
  private readonly subject = new Subject<NodeEvent>();
  /** See NodeRegistry. */
  readonly events$ = this.subject.asObservable();
  /** This node. */
  protected me: ClusterNode;

  constructor(self: Omit<ClusterNode, 'local' | 'ipv4AllocCidr'>) {
    this.me = { ...self, local: true };
    this.setSelf(this.me);
  }

  /** Replaces this node's entry (no event: events are about other nodes). */
  protected setSelf(me: ClusterNode): void {
    this.me = me;
    this.nodes.set(me.name, me);
    this.idOf(me.name);
  }

  /** The known node of this name. */
  protected known(name: string): ClusterNode | undefined {
    return this.nodes.get(name);
  }

  /** Another node appeared or changed: kept, and an upsert event. */
  protected put(n: ClusterNode): void {
    this.idOf(n.name);
    this.nodes.set(n.name, n);
    this.subject.next({ kind: 'upsert', node: n });
  }

  /** Another node went: forgotten, and a delete event; returns it (undefined when unknown). */
  protected drop(name: string): ClusterNode | undefined {
    const gone = this.nodes.get(name);
    if (!gone) return undefined;
    this.nodes.delete(name);
    this.subject.next({ kind: 'delete', node: gone });
    return gone;
  }

  /** No more events. */
  protected complete(): void {
    this.subject.complete();
  }

  private idOf(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(name, id);
    }
    return id;
  }

  /** See NodeRegistry. */
  self(): ClusterNode {
    return this.me;
  }

  /** See NodeRegistry. */
  list(): ClusterNode[] {
    return [...this.nodes.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** See NodeRegistry. */
  nodeIds(): { id: number; ips: string[] }[] {
    return this.list().map((n) => ({ id: this.idOf(n.name), ips: [n.ipv4] })).sort((a, b) => a.id - b.id);
  }
}
