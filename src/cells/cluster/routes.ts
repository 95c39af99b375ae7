/**
 * Native routing between nodes (Cilium's `--auto-direct-node-routes`): for every other node with a
 * pod CIDR, a route `<pod CIDR> via <node IP>` in the main table, replaced when the node's CIDR or
 * address changes, deleted when the node goes (`onNodeEvent`, called by the cluster cell's observer
 * job `node-routes`). A failed route change is retried by `resync` (a timer), which also puts back
 * routes someone deleted.
 */
import type { Health } from '../../hive/health.js';
import type { Logger } from '../../hive/logger.js';
import type { RouteSpec } from '../../netlink/index.js';
import type { ClusterNode, NodeEvent, NodeRegistry } from './types.js';

/** What the routes are written with (the agent's netlink handle; a fake in unit tests). */
export interface RouteWriter {
  addRoute(spec: RouteSpec): Promise<void>;
  deleteRoute(spec: RouteSpec): Promise<boolean>;
}

/** Keeps the routes to other nodes' pod CIDRs; see the module comment. */
export class NodeRoutes {
  /** Installed: node name -> route. */
  private readonly installed = new Map<string, { dst: string; gateway: string }>();
  /** Node events are followed from start to stop. */
  private following = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly nodes: NodeRegistry,
    private readonly routes: RouteWriter,
    private readonly health: Health,
    private readonly log: Logger,
  ) {}

  /** Installs routes for the nodes known now and follows changes from now on. */
  async start(): Promise<void> {
    this.following = true;
    await this.resync();
  }

  /** A node came, changed or went: its route follows (in order; ignored before start and after stop). */
  onNodeEvent(ev: NodeEvent): void {
    if (this.following) void this.enqueue(ev);
  }

  private enqueue(ev: NodeEvent): Promise<void> {
    this.chain = this.chain.then(() => (ev.kind === 'upsert' ? this.upsert(ev.node) : this.remove(ev.node.name)));
    return this.chain;
  }

  /** The routes installed now (node name -> route). */
  list(): ReadonlyMap<string, { dst: string; gateway: string }> {
    return this.installed;
  }

  /** Makes the routes match the nodes known now (every desired route put again, stale ones deleted). */
  async resync(): Promise<void> {
    const nodes = this.nodes.list().filter((n) => !n.local);
    for (const n of nodes) await this.enqueue({ kind: 'upsert', node: n });
    for (const name of [...this.installed.keys()]) if (!nodes.some((n) => n.name === name)) await this.enqueue({ kind: 'delete', node: { name } as ClusterNode });
  }

  private async upsert(n: ClusterNode): Promise<void> {
    if (n.local) return;
    if (!n.ipv4AllocCidr) return this.remove(n.name);
    const want = { dst: n.ipv4AllocCidr, gateway: n.ipv4 };
    const have = this.installed.get(n.name);
    try {
      if (have && have.dst !== want.dst) await this.routes.deleteRoute({ dst: have.dst, gateway: have.gateway });
      await this.routes.addRoute(want);
      this.installed.set(n.name, want);
      this.health.ok(`${this.installed.size} route(s) to other nodes' pod CIDRs`);
      if (have?.dst !== want.dst || have.gateway !== want.gateway) this.log.info({ node: n.name, ...want }, 'route to node pod CIDR installed');
    } catch (err) {
      this.health.degraded(`route ${want.dst} via ${want.gateway} (node ${n.name}) failed; retrying`, err as Error);
      this.log.warn({ node: n.name, ...want, err: (err as Error).message }, 'route to node pod CIDR failed');
    }
  }

  private async remove(name: string): Promise<void> {
    const have = this.installed.get(name);
    if (!have) return;
    try {
      await this.routes.deleteRoute({ dst: have.dst, gateway: have.gateway });
      this.installed.delete(name);
      this.log.info({ node: name, ...have }, 'route to node pod CIDR removed');
    } catch (err) {
      this.log.warn({ node: name, ...have, err: (err as Error).message }, 'removing the route to a node failed; retrying');
    }
  }

  /** Stops following; the routes stay (traffic to other nodes goes on while the agent restarts). */
  async stop(): Promise<void> {
    this.following = false;
    await this.chain;
  }
}
