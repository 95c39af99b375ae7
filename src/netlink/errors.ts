/** Errors of the netlink module: every failed operation is a {@link NetlinkError}. */
import { errnoName } from '../lib/errno.js';
import { constants } from 'node:os';

/** A failed netlink operation, naming the operation, the interface and the errno. */
export class NetlinkError extends Error {
  /** In a batch ({@link applyNetlinkSteps}), the index of the step that failed. */
  step?: number;

  /**
   * @param op the operation, e.g. `createVeth`, `addRoute`, `open`
   * @param ifname the interface concerned ("" when none)
   * @param errno the positive errno value
   * @param code the errno name, e.g. `EEXIST`
   * @param detail the kernel's extended-ack message or what was being done, when known
   */
  constructor(
    message: string,
    readonly op: string,
    readonly ifname: string,
    readonly errno: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(message);
    this.name = 'NetlinkError';
  }
}

export { errnoName };

/** Converts what the native addon threw into a {@link NetlinkError}; other errors pass through. */
export function toNetlinkError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof NetlinkError) return err;
  const e = err as Error & { errno?: unknown; code?: unknown; op?: unknown; ifname?: unknown; detail?: unknown };
  if (typeof e.errno !== 'number' || typeof e.op !== 'string') return err;
  const code = typeof e.code === 'string' ? e.code : errnoName(e.errno);
  const out = new NetlinkError(e.message, e.op, String(e.ifname ?? ''), e.errno, code, String(e.detail ?? ''));
  const step = (e as { step?: unknown }).step;
  if (typeof step === 'number') out.step = step;
  out.stack = e.stack;
  return out;
}

/** An error for a bad argument detected before reaching the kernel (errno EINVAL). */
export function invalidArgument(op: string, ifname: string, why: string): NetlinkError {
  return new NetlinkError(`${op}${ifname ? ` ${ifname}` : ''}: EINVAL (${why})`, op, ifname, constants.errno.EINVAL, 'EINVAL', why);
}
