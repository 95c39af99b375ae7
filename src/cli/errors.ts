/** Errors of the CLI itself (the API's are in src/api/errors.ts). */

/** Bad arguments or flags; the CLI prints the message and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** An operation did not complete (e.g. `--wait` ran out of time); the CLI exits 1. */
export class CliFailure extends Error {
  override readonly name = 'CliFailure';
}
