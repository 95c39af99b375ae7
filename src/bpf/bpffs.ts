/** bpffs: make sure the BPF root (default /sys/fs/bpf/cellium) is on a mounted bpffs. */
import { mkdirSync } from 'node:fs';
import { sys } from './errors.js';
import { loadAddon } from './native.js';

/** The default BPF root of the agent (--bpf-root). */
export const DEFAULT_BPF_ROOT = '/sys/fs/bpf/cellium';
/** Where bpffs is normally mounted. */
export const BPFFS_MOUNT = '/sys/fs/bpf';

/** Whether `path` is on a bpffs. */
export function isBpffs(path: string): boolean {
  const a = loadAddon();
  return sys(() => a.isBpffs(path));
}

/**
 * Makes sure `root` exists on a bpffs: mounts bpffs at /sys/fs/bpf (or at `root` itself when it
 * lies elsewhere) when it is not mounted, then creates `root`. Returns whether it mounted.
 */
export function ensureBpffs(root: string = DEFAULT_BPF_ROOT): { mounted: boolean } {
  const a = loadAddon();
  if (sys(() => a.isBpffs(root))) return { mounted: false };
  const mountPoint = root === BPFFS_MOUNT || root.startsWith(`${BPFFS_MOUNT}/`) ? BPFFS_MOUNT : root;
  let mounted = false;
  if (!sys(() => a.isBpffs(mountPoint))) {
    mkdirSync(mountPoint, { recursive: true });
    sys(() => a.mountBpffs(mountPoint));
    mounted = true;
  }
  mkdirSync(root, { recursive: true, mode: 0o700 });
  return { mounted };
}
