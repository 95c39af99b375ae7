/** Turning any thrown value into a message or an Error (shared by the libraries and the hive). */

/** The message of any thrown value. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Any thrown value as an Error. */
export function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
