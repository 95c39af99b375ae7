/** The mirrors' part of the kvstore status line and health: what each copy reflects and how long ago it was checked. */
import type { MirrorStatus } from './types.js';

/** A mirror not found equal to etcd for this long while etcd answers is degraded (a few probe intervals). */
export const MIRROR_STALE_MS = 10_000;

function ago(now: number, at: number | undefined): string {
  return at === undefined ? 'never' : `${Math.max(0, Math.round((now - at) / 1000))}s ago`;
}

/** The name of a mirrored prefix in the status (`cilium/state/ip/v1/default/` -> `ip/v1/default`). */
export function mirrorName(prefix: string): string {
  return prefix.replace(/^cilium\/state\//, '').replace(/\/$/, '');
}

/** `mirrors: ip/v1/default rev 41 (3 keys, verified 1s ago), ...; store rev 44`. */
export function describeMirrors(mirrors: readonly MirrorStatus[], storeRevision: number, now: number): string {
  const each = mirrors.map((m) => `${mirrorName(m.prefix)} rev ${m.revision} (${m.keys} keys, ${m.state === 'starting' ? 'starting' : m.state === 'resyncing' ? `listing again: ${m.reason ?? 'starting'}` : `verified ${ago(now, m.verifiedAt)}`})`);
  return `mirrors: ${each.join(', ')}; store rev ${storeRevision}`;
}

/** Why the mirrors cannot be trusted now, or undefined: one is being listed again, or was not verified for MIRROR_STALE_MS while etcd answered. */
export function mirrorTrouble(mirrors: readonly MirrorStatus[], reachable: boolean, now: number): string | undefined {
  const relisting = mirrors.filter((m) => m.state === 'resyncing');
  if (relisting.length) return `kvstore mirror ${relisting.map((m) => `${mirrorName(m.prefix)} (${m.reason ?? 'starting'})`).join(', ')} being listed again`;
  if (!reachable) return undefined;
  const stale = mirrors.filter((m) => m.state === 'watching' && (m.verifiedAt === undefined || now - m.verifiedAt > MIRROR_STALE_MS));
  if (stale.length) return `kvstore mirror ${stale.map((m) => `${mirrorName(m.prefix)} (verified ${ago(now, m.verifiedAt)})`).join(', ')} not checked against etcd for over ${MIRROR_STALE_MS / 1000}s`;
  return undefined;
}
