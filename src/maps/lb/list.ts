/**
 * The LB maps as Cilium's `bpf lb list` prints them: each frontend (master entry) with its
 * rev-NAT index and flags, then its backends by slot.
 */
import { SvcFlag, SvcFlag2, type LBMapSet, type LBServiceKey, type LBServiceValue } from '../../datapath/lb-maps.js';

/** One frontend of the listing. */
export interface LBListEntry {
  /** `10.96.0.10:80/TCP` (`/i` for the internal scope). */
  readonly service: string;
  readonly revNat: number;
  readonly flags: readonly string[];
  readonly count: number;
  readonly qcount: number;
  /** Slot -> backend (`10.0.1.1:8080/TCP (active)`), or `(missing backend N)`. */
  readonly backends: readonly { readonly slot: number; readonly backendId: number; readonly backend: string }[];
}

const PROTO: Readonly<Record<number, string>> = { 6: 'TCP', 17: 'UDP', 0: 'ANY' };
const STATE = ['active', 'terminating', 'quarantined', 'maintenance'];
const host = (ip: string, port: number, proto: number): string => `${ip.includes(':') ? `[${ip}]` : ip}:${port}/${PROTO[proto] ?? proto}`;

/** The names of a master entry's flags. */
export function serviceFlagNames(v: LBServiceValue, k: LBServiceKey): string[] {
  const out: string[] = [];
  if (k.port === 0 && k.proto === 0) return ['wildcard'];
  const f = v.flags;
  if (f & SvcFlag.nodePort) out.push('NodePort');
  else if (f & SvcFlag.externalIp) out.push('ExternalIPs');
  else if (f & SvcFlag.loadBalancer) out.push('LoadBalancer');
  else if (f & SvcFlag.hostPort) out.push('HostPort');
  else if (v.flags2 & SvcFlag2.localRedirect) out.push('LocalRedirect');
  else out.push('ClusterIP');
  if (!(f & SvcFlag.routable)) out.push('non-routable');
  if (f & SvcFlag.affinity) out.push(`sessionAffinity ${v.backendId}s`);
  if (f & SvcFlag.extLocalScope) out.push('Local');
  if (v.flags2 & SvcFlag2.intLocalScope) out.push('InternalLocal');
  if (f & SvcFlag.sourceRange) out.push('check source-range');
  return out;
}

/** Every frontend in the maps, sorted by address. */
export function listLB(maps: LBMapSet): LBListEntry[] {
  const out: LBListEntry[] = [];
  for (const [svc, be] of [[maps.services4, maps.backends4], [maps.services6, maps.backends6]] as const) {
    const all = svc.entries();
    const keyOf = (k: LBServiceKey) => `${k.address}|${k.port}|${k.proto}|${k.scope}`;
    const slots = new Map<string, [number, number][]>();
    for (const [k, v] of all) if (k.slot > 0) slots.set(keyOf(k), [...(slots.get(keyOf(k)) ?? []), [k.slot, v.backendId]]);
    for (const [k, v] of all) {
      if (k.slot !== 0) continue;
      out.push({
        service: `${host(k.address, k.port, k.proto)}${k.scope === 1 ? '/i' : ''}`,
        revNat: v.revNat,
        flags: serviceFlagNames(v, k),
        count: v.count,
        qcount: v.qcount,
        backends: (slots.get(keyOf(k)) ?? []).sort((a, b) => a[0] - b[0]).map(([slot, id]) => {
          const b = be.get(id);
          return { slot, backendId: id, backend: b ? `${host(b.address, b.port, b.proto)} (${STATE[b.flags] ?? `state ${b.flags}`})` : `(missing backend ${id})` };
        }),
      });
    }
  }
  return out.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
}

/** Cilium's `bpf lb list` text: SERVICE ADDRESS, BACKEND ADDRESS (REVNAT_ID) (SLOT). */
export function renderLBList(entries: readonly LBListEntry[]): string {
  const rows: [string, string][] = [['SERVICE ADDRESS', 'BACKEND ADDRESS (REVNAT_ID) (SLOT)']];
  for (const e of entries) {
    rows.push([e.service, `${e.service.includes('[') ? '[::]:0' : '0.0.0.0:0'} (${e.revNat}) (0) [${e.flags.join(', ')}]`]);
    for (const b of e.backends) rows.push(['', `${b.backend} (${e.revNat}) (${b.slot})`]);
  }
  const w = Math.max(...rows.map((r) => r[0].length));
  return rows.map(([a, b]) => `${a.padEnd(w)}   ${b}`.trimEnd()).join('\n') + '\n';
}
