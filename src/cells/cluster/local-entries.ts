/** This node's endpoints as ipcache entries (GET /ip), shared by the kvstore and CiliumEndpoint ipcaches. */
import { hostCidr } from '../../lib/addr.js';
import type { EndpointManager, EndpointView } from '../endpoint/index.js';
import type { IPCacheListEntry } from './types.js';

/** The pod's own name (the endpoint's podName is `<namespace>/<name>`). */
export function podOf(ep: EndpointView): string | undefined {
  return ep.podName?.slice(ep.podName.indexOf('/') + 1) || undefined;
}

/** Every local endpoint address with an identity, as `source: local` entries. */
export function localEntries(endpoints: EndpointManager, hostIP: string): IPCacheListEntry[] {
  const out: IPCacheListEntry[] = [];
  for (const ep of endpoints.getEndpoints()) {
    if (ep.identity === undefined) continue;
    for (const ip of [ep.ipv4, ep.ipv6]) {
      if (ip) out.push({ cidr: hostCidr(ip), identity: ep.identity, hostIP, source: 'local', ...(ep.namespace ? { namespace: ep.namespace } : {}), ...(podOf(ep) ? { name: podOf(ep) } : {}) });
    }
  }
  return out;
}

/** Entries by prefix (later ones win), sorted by prefix. */
export function sortedEntries(entries: Iterable<IPCacheListEntry>): IPCacheListEntry[] {
  const out = new Map<string, IPCacheListEntry>();
  for (const e of entries) out.set(e.cidr, e);
  return [...out.values()].sort((a, b) => a.cidr.localeCompare(b.cidr, 'en', { numeric: true }));
}
