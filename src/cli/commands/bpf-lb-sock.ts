/**
 * `cellium bpf lb list --sock`: the reverse-socket maps of socket load balancing read from their
 * pins (root or CAP_BPF): per socket cookie and backend, the frontend recvmsg and getpeername show.
 */
import { join } from 'node:path';
import { BpfMap } from '../../bpf/index.js';
import { REVERSE_SK_MAP_NAMES, reverseSkEntries } from '../../maps/lb/index.js';
import { CliFailure } from '../errors.js';

/** One entry as listed (`-o json`): the cookie as a decimal string. */
export interface ReverseSkListEntry {
  readonly cookie: string;
  readonly backend: string;
  readonly frontend: string;
  readonly revNat: number;
}

const hostPort = (ip: string, port: number): string => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;

/** Both maps' entries, IPv4 first, each sorted by frontend then cookie. */
export function listReverseSk(bpfRoot: string): ReverseSkListEntry[] {
  const out: ReverseSkListEntry[] = [];
  for (const [family, name] of [[4, REVERSE_SK_MAP_NAMES.reverseSk4], [6, REVERSE_SK_MAP_NAMES.reverseSk6]] as const) {
    const path = join(bpfRoot, name);
    let map: BpfMap;
    try {
      map = BpfMap.openPinned(path);
    } catch (err) {
      const e = err as { code?: string; message: string };
      if (e.code === 'ENOENT') throw new CliFailure(`no reverse-socket map pinned at ${path}: is the agent running with --datapath-mode=bpf, --bpf-lb-sock=true and --bpf-root=${bpfRoot}?`);
      if (e.code === 'EPERM' || e.code === 'EACCES') throw new CliFailure(`cannot open ${path}: needs root or CAP_BPF`);
      throw new CliFailure(e.message);
    }
    try {
      const es = reverseSkEntries(map, family).map((e) => ({ cookie: String(e.cookie), backend: hostPort(e.backend, e.backendPort), frontend: hostPort(e.frontend, e.frontendPort), revNat: e.revNat }));
      out.push(...es.sort((a, b) => a.frontend.localeCompare(b.frontend) || a.cookie.localeCompare(b.cookie)));
    } finally {
      map.close();
    }
  }
  return out;
}

/** The table: SOCKET COOKIE, BACKEND, FRONTEND (REVNAT_ID). */
export function renderReverseSk(es: readonly ReverseSkListEntry[]): string {
  const rows = [['SOCKET COOKIE', 'BACKEND', 'FRONTEND (REVNAT_ID)'], ...es.map((e) => [e.cookie, e.backend, `${e.frontend} (${e.revNat})`])];
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(w[i]!) : c)).join('   ')).join('\n') + '\n';
}
