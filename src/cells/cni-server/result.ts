/**
 * CNI results: one version-neutral model, read from a `prevResult` of any supported version and
 * written in the format of the requested cniVersion (0.3.1 and 0.4.0 give every IP a `version`;
 * 1.0.0 and 1.1.0 do not).
 */
import { isIP } from 'node:net';
import type { CniVersion } from '../../cni/protocol.js';

/** An interface of a result; `sandbox` is the netns path for interfaces inside the container. */
export interface ResultInterface {
  readonly name: string;
  readonly mac?: string;
  readonly mtu?: number;
  readonly sandbox?: string;
}

/** An IP of a result; `interface` indexes `interfaces`. */
export interface ResultIP {
  /** CIDR, e.g. `10.200.0.5/32`. */
  readonly address: string;
  readonly gateway?: string;
  readonly interface?: number;
}

/** A route of a result. */
export interface ResultRoute {
  readonly dst: string;
  readonly gw?: string;
}

/** DNS settings of a result. */
export interface ResultDNS {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

/** A result, independent of its CNI version. */
export interface CniResultModel {
  readonly interfaces: readonly ResultInterface[];
  readonly ips: readonly ResultIP[];
  readonly routes: readonly ResultRoute[];
  readonly dns: ResultDNS;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function str(o: Record<string, unknown>, k: string, where: string, required = false): string | undefined {
  const v = o[k];
  if (v === undefined || v === null) {
    if (required) throw new Error(`${where}.${k} is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw new Error(`${where}.${k} must be a string`);
  return v;
}

function list(o: Record<string, unknown>, k: string): unknown[] {
  const v = o[k];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`${k} must be an array`);
  return v;
}

function cidr(value: string, where: string): string {
  const [addr, len] = value.split('/');
  const fam = isIP(addr ?? '');
  const n = Number(len);
  if (!fam || len === undefined || !Number.isInteger(n) || n < 0 || n > (fam === 4 ? 32 : 128)) throw new Error(`${where} "${value}" is not a CIDR`);
  return value;
}

/** Reads a result of any supported version; throws an Error naming the bad key. */
export function parseResult(raw: unknown): CniResultModel {
  if (!isObj(raw)) throw new Error('must be an object');
  const interfaces = list(raw, 'interfaces').map((x, i) => {
    const where = `interfaces[${i}]`;
    if (!isObj(x)) throw new Error(`${where} must be an object`);
    const mtu = x.mtu;
    return {
      name: str(x, 'name', where, true)!,
      ...(str(x, 'mac', where) ? { mac: str(x, 'mac', where)!.toLowerCase() } : {}),
      ...(typeof mtu === 'number' ? { mtu } : {}),
      ...(str(x, 'sandbox', where) ? { sandbox: str(x, 'sandbox', where)! } : {}),
    };
  });
  const ips = list(raw, 'ips').map((x, i) => {
    const where = `ips[${i}]`;
    if (!isObj(x)) throw new Error(`${where} must be an object`);
    const idx = x.interface;
    if (idx !== undefined && idx !== null && (!Number.isInteger(idx) || (idx as number) < 0 || (idx as number) >= interfaces.length)) {
      throw new Error(`${where}.interface must index interfaces (0..${interfaces.length - 1})`);
    }
    const gw = str(x, 'gateway', where);
    return {
      address: cidr(str(x, 'address', where, true)!, `${where}.address`),
      ...(gw ? { gateway: gw } : {}),
      ...(typeof idx === 'number' ? { interface: idx } : {}),
    };
  });
  const routes = list(raw, 'routes').map((x, i) => {
    const where = `routes[${i}]`;
    if (!isObj(x)) throw new Error(`${where} must be an object`);
    const gw = str(x, 'gw', where);
    return { dst: cidr(str(x, 'dst', where, true)!, `${where}.dst`), ...(gw ? { gw } : {}) };
  });
  const dns = isObj(raw.dns) ? (raw.dns as ResultDNS) : {};
  return { interfaces, ips, routes, dns };
}

/** True for the pre-1.0 result format (IPs carry `version`). */
function legacy(version: CniVersion): boolean {
  return version === '0.3.1' || version === '0.4.0';
}

/** The result as printed for `version`. */
export function formatResult(r: CniResultModel, version: CniVersion): Record<string, unknown> {
  return {
    cniVersion: version,
    interfaces: r.interfaces.map((i) => ({ ...i })),
    ips: r.ips.map((ip) => ({
      ...(legacy(version) ? { version: ip.address.includes(':') ? '6' : '4' } : {}),
      ...ip,
    })),
    routes: r.routes.map((x) => ({ ...x })),
    dns: { ...r.dns },
  };
}
