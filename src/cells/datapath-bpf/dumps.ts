/**
 * How the BPF datapath's maps read for `GET /map` and `GET /map/{name}`: the kernel's contents in
 * the same text as the memory datapath's dumps, with the reconciliation status of the table (or,
 * for a policy map, of that endpoint's objects) that writes them.
 */
import type { DesiredObject, DesiredTable, TableStatus } from '../../lib/reconciler/index.js';
import { policyKeyId } from '../../maps/policy/key.js';
import type { MapDump, ReconcileStatus } from '../../datapath/types.js';
import type { KernelMaps } from './kernel-maps.js';
import type { PolicyObject } from './tables.js';

/** A table's status as a map's status. */
export function tableStatus(s: TableStatus): ReconcileStatus {
  return { state: s.state, ...(s.errors ? { message: s.lastErrors.join('; ') } : {}), updatedAt: s.updatedAt };
}

/** The status of one endpoint's policy objects: a rejected policy, else the worst object state. */
export function policyStatus(table: DesiredTable<PolicyObject>, keys: readonly string[], rejected: string | undefined): ReconcileStatus {
  if (rejected) return { state: 'error', message: rejected, updatedAt: new Date().toISOString() };
  const objs = keys.map((k) => table.get(k)).filter((o): o is DesiredObject<PolicyObject> => !!o);
  const newest = objs.reduce((t, o) => Math.max(t, o.updatedAt), 0);
  const updatedAt = new Date(newest || Date.now()).toISOString();
  const err = objs.find((o) => o.state === 'error');
  if (err) return { state: 'error', message: `${err.key}: ${err.message ?? 'write failed'}`, updatedAt };
  return { state: objs.some((o) => o.state === 'pending') ? 'pending' : 'done', updatedAt };
}

/** cellium_lxc as the kernel holds it. */
export function dumpLxc(kernel: KernelMaps, name: string, status: ReconcileStatus): MapDump {
  const entries = kernel.lxc.entries().map(([ip, v]) => ({ key: ip, value: `id=${v.endpointId} ifindex=${v.ifIndex} identity=${v.identity} mac=${v.mac}` }));
  return { name, path: `${kernel.root}/${name}`, status, entries };
}

/** cellium_ipcache as the kernel holds it. */
export function dumpIPCache(kernel: KernelMaps, name: string, status: ReconcileStatus): MapDump {
  const entries = kernel.ipcache.entries().map(([cidr, v]) => ({ key: cidr, value: `identity=${v.identity}` }));
  return { name, path: `${kernel.root}/${name}`, status, entries };
}

/** The drop counters by reason, summed over CPUs (nothing writes them but the program). */
export function dumpMetrics(kernel: KernelMaps, name: string): MapDump {
  const entries = Object.entries(kernel.dropCounters()).map(([reason, c]) => ({ key: reason, value: `packets=${c.packets} bytes=${c.bytes}` }));
  return { name, path: `${kernel.root}/${name}`, status: { state: 'done', updatedAt: new Date().toISOString() }, entries };
}

/**
 * An endpoint's policy map as the kernel holds it (no entries when it is not pinned); `shared`:
 * the pin names the map the endpoint shares with others (opened as it is).
 */
export function dumpPolicy(kernel: KernelMaps, id: number, name: string, shared: boolean, status: ReconcileStatus): MapDump {
  const map = kernel.existingPolicy(id, shared);
  const entries = (map?.entries() ?? []).map(([k, deny]) => ({ key: policyKeyId(k), value: deny ? 'deny' : 'allow' }));
  return { name, path: `${kernel.root}/${name}`, status, entries };
}
