/**
 * The cluster's API (Cilium's paths and models): GET /cluster/nodes (ClusterNodeStatus), GET /ip
 * (IPListEntry[], `?cidr=` filters), GET /node/ids (NodeID[]).
 */
import type { Router } from 'express';
import { parseCidr, cidrContains, type Cidr } from '../../lib/addr.js';
import { badField, notFound, type ApiOperations } from '../api-server/index.js';
import type { ClusterIPCache, ClusterNode, NodeRegistry } from './types.js';

/** Cilium's NodeElement of a node. */
export function nodeElement(n: ClusterNode): Record<string, unknown> {
  return {
    name: `${n.cluster}/${n.name}`,
    'primary-address': { ipv4: { enabled: true, ip: n.ipv4, ...(n.ipv4AllocCidr ? { 'alloc-range': n.ipv4AllocCidr } : {}), 'address-type': 'InternalIP' } },
    source: n.local ? 'local' : (n.source ?? 'kvstore'),
  };
}

/** The cluster router. */
export function clusterRouter(ops: ApiOperations, nodes: NodeRegistry, ipcache: ClusterIPCache): Router {
  const r = ops.router();
  ops.serve(r, 'GetClusterNodes', (_req, res) => {
    const self = nodes.self();
    res.json({ self: `${self.cluster}/${self.name}`, 'nodes-added': nodes.list().map(nodeElement), 'client-id': 0 });
  });
  ops.serve(r, 'GetIP', (_req, res) => {
    const q = res.locals.api.query as Record<string, unknown>;
    let within: Cidr | undefined;
    if (typeof q.cidr === 'string' && q.cidr !== '') {
      try {
        within = parseCidr(q.cidr);
      } catch (err) {
        throw badField('/query/cidr', (err as Error).message, 'a CIDR, e.g. 10.0.0.0/8');
      }
    }
    const list = ipcache.list().filter((e) => !within || cidrContains(within, parseCidr(e.cidr)));
    if (within && list.length === 0) throw notFound(`no ipcache entry within ${String(q.cidr)}`);
    res.json(list.map((e) => ({
      cidr: e.cidr, identity: e.identity, ...(e.hostIP ? { hostIP: e.hostIP } : {}),
      metadata: { source: e.source, ...(e.namespace ? { namespace: e.namespace } : {}), ...(e.name ? { name: e.name } : {}) },
    })));
  });
  ops.serve(r, 'GetNodeIds', (_req, res) => {
    res.json(nodes.nodeIds());
  });
  // its handlers throw only HttpErrors (no manager's domain errors to map): the API's error handler answers them
  return r;
}
