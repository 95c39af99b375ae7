/** A {@link RouteSpec} as the addon takes it: `default` and bare addresses as CIDR, scope as a number. */
import { isIP } from 'node:net';
import { invalidArgument } from './errors.js';
import type { RawRouteSpec } from './native.js';
import { SCOPES, type RouteSpec } from './types.js';

/** Converts `default` and bare addresses to CIDR; the family of a default route follows the gateway. */
function routeDst(spec: RouteSpec, op: string): string {
  if (spec.dst === 'default') return spec.gateway && isIP(spec.gateway) === 6 ? '::/0' : '0.0.0.0/0';
  const [addr, len] = spec.dst.split('/');
  const family = isIP(addr ?? '');
  if (family === 0) throw invalidArgument(op, spec.dev ?? '', `route destination "${spec.dst}" is not an IP or CIDR`);
  return len === undefined ? `${addr}/${family === 4 ? 32 : 128}` : spec.dst;
}

function scopeNumber(spec: RouteSpec): number | undefined {
  if (spec.scope === undefined) return undefined;
  return typeof spec.scope === 'number' ? spec.scope : SCOPES[spec.scope];
}

/** The addon's form of a route; throws a NetlinkError (EINVAL) naming op for a bad destination. */
export function rawRoute(spec: RouteSpec, op: string): RawRouteSpec {
  return { ...spec, dst: routeDst(spec, op), scope: scopeNumber(spec) };
}
