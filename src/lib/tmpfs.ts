/** Whether a path is on tmpfs (where a node keeps /var/run): memory, where a write costs no I/O. */
import { existsSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';

/** statfs f_type of tmpfs. */
const TMPFS_MAGIC = 0x01021994;

/** Whether `path` (or, while it does not exist yet, its nearest existing parent) is on tmpfs. */
export function onTmpfs(path: string): boolean {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  try {
    return statfsSync(p).type === TMPFS_MAGIC;
  } catch {
    return false;
  }
}
