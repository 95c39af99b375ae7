/**
 * Errors of the CNI server: every failure of a CNI command is a {@link CniFailure} carrying the
 * CNI error code to print (the spec's codes below 100, Cellium's own from 100 up), a message that
 * names the offending field or variable, and details.
 */
import { CniErrorCode } from '../../cni/protocol.js';

/** Cellium's plugin-specific CNI error codes (the spec leaves 100 and up to plugins). */
export const CelliumCniCode = {
  /** CHECK found the endpoint, the interface or the addresses not as the prevResult says. */
  CheckFailed: 100,
  /** IPAM could not allocate an address (pool exhausted, no pool). */
  IPAllocationFailed: 101,
  /** The endpoint could not be created (its first regeneration failed, a clash). */
  EndpointFailed: 102,
} as const;

/** A CNI command failure, reported as the CNI error result `{code, msg, details}`. */
export class CniFailure extends Error {
  override readonly name = 'CniFailure';
  constructor(
    readonly code: number,
    message: string,
    readonly details = '',
  ) {
    super(message);
  }
}

/** The network configuration (stdin) is invalid; `field` is the JSON key at fault. */
export function invalidConfig(field: string, why: string): CniFailure {
  return new CniFailure(CniErrorCode.InvalidConfig, `invalid network configuration: ${field} ${why}`);
}

/**
 * An environment variable (CNI_ARGS, CNI_NETNS, CNI_IFNAME, …) is invalid: code 7, message
 * `invalid CNI_IFNAME: "eth0;id" contains ";" (use …)`. `why` shows the value with
 * {@link quoteValue}; `fix` says what to pass instead.
 */
export function invalidEnv(variable: string, why: string, fix?: string): CniFailure {
  return new CniFailure(CniErrorCode.InvalidEnv, `invalid ${variable}: ${why}${fix ? ` (${fix})` : ''}`);
}

const QUOTE_MAX = 64;

/**
 * A value as messages show it: in double quotes, printable ASCII as is, `"` and `\` escaped,
 * anything else as \uXXXX; past 64 characters shortened, with the full length appended.
 */
export function quoteValue(v: string): string {
  const chars = [...v];
  const shown = chars.slice(0, QUOTE_MAX).map((c) => {
    const cp = c.codePointAt(0)!;
    if (c === '"' || c === '\\') return `\\${c}`;
    if (cp >= 0x20 && cp < 0x7f) return c;
    return cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  });
  const more = chars.length > QUOTE_MAX ? `..." (${chars.length} characters)` : '"';
  return `"${shown.join('')}${more}`;
}

/** A netlink or file operation failed. */
export function ioFailure(what: string, err: unknown): CniFailure {
  return new CniFailure(CniErrorCode.IoFailure, `${what}: ${(err as Error)?.message ?? String(err)}`);
}

/** CHECK found something that does not match. */
export function checkFailed(why: string, details = ''): CniFailure {
  return new CniFailure(CelliumCniCode.CheckFailed, `CHECK failed: ${why}`, details);
}

/** Turns anything thrown into a CniFailure (`fallback` is the code of an unexpected error). */
export function asCniFailure(err: unknown, fallback: number = CniErrorCode.IoFailure): CniFailure {
  if (err instanceof CniFailure) return err;
  const code = typeof (err as { cniCode?: unknown })?.cniCode === 'number' ? (err as { cniCode: number }).cniCode : fallback;
  return new CniFailure(code, (err as Error)?.message ?? String(err));
}

/**
 * A host interface already belongs to another endpoint (`what` says how this command came to it):
 * refused, since an interface carries one endpoint's programs and a second one would take them over.
 */
export function interfaceTaken(what: string, ifName: string, holder: { id: number; containerId?: string; containerIfName?: string }): CniFailure {
  const of = holder.containerId ? ` (container ${holder.containerId}, interface ${holder.containerIfName ?? '?'})` : '';
  return new CniFailure(
    CelliumCniCode.EndpointFailed,
    `${what}: host interface ${ifName} already belongs to endpoint ${holder.id}${of}; one endpoint per interface: remove that endpoint (CNI DEL of its container) first`,
  );
}
