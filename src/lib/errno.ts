/** Errno names for the numbers native code reports (the one place they are looked up). */
import { getSystemErrorName } from 'node:util';

/** The errno name of a positive errno value (`ENOENT`; the kernel's 524 is `ENOTSUPP`), or `E<n>` when unknown. */
export function errnoName(errno: number): string {
  if (errno === 524) return 'ENOTSUPP';
  if (!Number.isInteger(errno) || errno <= 0) return `E${errno}`;
  const name = getSystemErrorName(-errno);
  return name.startsWith('Unknown') ? `E${errno}` : name;
}
