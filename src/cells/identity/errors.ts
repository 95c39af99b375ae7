/** Errors of the identity cell, each naming what was wrong and the fix. */

/** What went wrong. */
export type IdentityErrorCode = 'invalid' | 'exhausted' | 'state-file' | 'backend';

/** An identity error. */
export class IdentityError extends Error {
  override readonly name = 'IdentityError';
  constructor(
    readonly code: IdentityErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A label set that cannot become an identity. */
export function invalidLabels(why: string): IdentityError {
  return new IdentityError('invalid', `invalid identity labels: ${why}`);
}

/** Every number of a range is in use. */
export function rangeExhausted(scope: string, min: number, max: number): IdentityError {
  return new IdentityError('exhausted', `no free ${scope} identity in ${min}..${max}: release identities (endpoints, CIDR policies) or run identity GC`);
}

/** The state file exists but cannot be read. */
export function badStateFile(file: string, why: string): IdentityError {
  return new IdentityError('state-file', `identity state file ${file} is unreadable (${why}): restore it from a backup, or move it aside (mv ${file} ${file}.bad); restored endpoints then claim the identity numbers recorded in their own state again, other label sets get new numbers`);
}

/** The backend kept refusing the numbers offered for a label set. */
export function backendConflict(key: string, attempts: number): IdentityError {
  return new IdentityError('backend', `identity backend refused ${attempts} numbers for labels "${key}": another allocator holds them; retry later`);
}

/** A new identity was not recorded by the backend in time (etcd or the apiserver unreachable). */
export function allocationTimeout(key: string, ms: number, backend: string, cause?: unknown): IdentityError {
  const why = cause instanceof Error && !/aborted|timed out/i.test(cause.message) ? ` (${cause.message})` : '';
  const store = backend === 'crd'
    ? 'the apiserver did not answer'
    : 'the kvstore did not answer';
  const check = backend === 'crd' ? 'check the apiserver (cellium status shows the kubernetes line)' : 'check etcd (cellium status shows the kvstore line)';
  return new IdentityError('backend', `no identity for labels "${key}" within ${ms} ms (--identity-allocation-timeout): ${store}${why}; nothing was allocated: ${check} and retry`);
}

/** --identity-allocation-mode=kvstore without an etcd to keep them in. */
export function kvstoreModeUnavailable(): IdentityError {
  return new IdentityError('backend', '--identity-allocation-mode=kvstore needs --kvstore=etcd (and --kvstore-opt etcd.config=FILE): give both, or use --identity-allocation-mode=crd (CiliumIdentity objects, with Kubernetes)');
}

/** The agent began stopping: no identity is allocated any more. */
export function allocatorStopping(key: string): IdentityError {
  return new IdentityError('backend', `no identity for labels "${key}": the agent is stopping; nothing was allocated`);
}
