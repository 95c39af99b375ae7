/** Errors of the BPF datapath cell: every failure names the map or endpoint it concerns. */

/** What failed: a map operation, a program load/attach, or the datapath not being started. */
export type BpfDatapathErrorCode = 'map' | 'program' | 'not-started';

/** A BPF datapath error; `cause` keeps the underlying BpfError (syscall, errno, hint). */
export class BpfDatapathError extends Error {
  override readonly name = 'BpfDatapathError';
  constructor(
    readonly code: BpfDatapathErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Wraps an error from the BPF layer with what was being done. */
export function wrapBpf(code: BpfDatapathErrorCode, what: string, err: unknown): BpfDatapathError {
  if (err instanceof BpfDatapathError) return err;
  return new BpfDatapathError(code, `${what}: ${(err as Error).message}`, { cause: err });
}

/**
 * The interface a stale endpoint's programs guarded (its endpoint was not restored) could not be
 * deleted: its pod would run with no enforcement, so the start fails.
 */
export function staleInterfaceNotDeleted(endpointId: number, ifName: string, err: unknown): BpfDatapathError {
  return new BpfDatapathError(
    'program',
    `endpoint ${endpointId} was not restored, but its programs guarded ${ifName}, which could not be deleted (${(err as Error).message}); ` +
      `its pod would run with no enforcement; fix: delete it (ip link del ${ifName}) and re-create its pod, or restore the endpoint's state directory, then start the agent again`,
    { cause: err },
  );
}
