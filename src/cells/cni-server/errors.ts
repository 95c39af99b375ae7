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

/** An environment variable (CNI_ARGS, CNI_NETNS, CNI_IFNAME, …) is invalid or missing. */
export function invalidEnv(variable: string, why: string): CniFailure {
  return new CniFailure(CniErrorCode.InvalidEnv, `invalid environment: ${variable} ${why}`);
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
