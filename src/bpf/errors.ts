/**
 * Errors of the BPF layer: every failed addon call becomes a {@link BpfError} naming the syscall,
 * the errno name and a hint on what to do (EPERM -> "needs root or CAP_BPF", missing bpffs ->
 * "mount -t bpf bpf /sys/fs/bpf", ...). hintFor is pure, so the mapping is unit-tested.
 */
import { errnoName } from '../lib/errno.js';

/** A failed BPF operation. */
export class BpfError extends Error {
  /**
   * @param syscall the failed call (`bpf_map_update_elem`, `bpf_obj_get`, `bpf_object__load`, ...)
   * @param errno the positive errno value
   * @param code the errno name (`EPERM`)
   * @param path the bpffs or file path concerned ("" when none)
   * @param detail more context: the verifier log on a failed load, the map or interface ("" when none)
   * @param hint what to do about it ("" when nothing specific)
   */
  constructor(
    message: string,
    readonly syscall: string,
    readonly errno: number,
    readonly code: string,
    readonly path: string,
    readonly detail: string,
    readonly hint: string,
  ) {
    super(message);
    this.name = 'BpfError';
  }
}

export { errnoName };

const MOUNT_HINT = 'is bpffs mounted? mount -t bpf bpf /sys/fs/bpf';

/** The hint for a failure, from the syscall, errno name and path (pure). */
export function hintFor(syscall: string, code: string, path = ''): string {
  const onPin = syscall === 'bpf_obj_get' || syscall === 'bpf_obj_pin';
  switch (code) {
    case 'EPERM':
      if (syscall === 'mount') return 'needs root (CAP_SYS_ADMIN) to mount bpffs';
      if (syscall === 'bpf_obj_pin') return `needs root or CAP_BPF, and ${path || 'the path'} must be on a bpffs (mount -t bpf bpf /sys/fs/bpf)`;
      if (syscall.startsWith('bpf_tc') || syscall === 'bpf_link_create') return 'needs root or CAP_BPF and CAP_NET_ADMIN';
      return 'needs root or CAP_BPF';
    case 'EACCES':
      if (syscall === 'bpf_object__load') return 'the verifier rejected a program: the detail holds its log';
      return 'needs root or CAP_BPF';
    case 'ENOENT':
      if (onPin) return `nothing pinned at ${path || 'that path'}; ${MOUNT_HINT}`;
      if (syscall === 'bpf_object__open_file') return 'BPF object missing: run npm run build (needs clang)';
      return '';
    case 'EEXIST':
      return onPin ? `${path || 'the path'} is already pinned: unpin it first` : 'the entry exists (BPF_NOEXIST)';
    case 'E2BIG':
      return 'the map is full (max_entries)';
    case 'ENOMEM':
      return 'out of memory for BPF: on kernels < 5.11 raise RLIMIT_MEMLOCK (ulimit -l unlimited)';
    case 'EINVAL':
      if (syscall === 'bpf_object__load') return 'the verifier rejected a program: the detail holds its log';
      if (syscall === 'bpf_link_create') return 'tcx needs kernel >= 6.6 (the legacy clsact attach is the fallback)';
      if (syscall === 'bpf_object__reuse_map' || syscall === 'bpf_map__reuse_fd') return 'the pinned map differs from the object\'s (type, key/value size, max_entries or flags)';
      return 'invalid argument (wrong key/value size or flags?)';
    case 'ENODEV':
      return 'no such interface (ifindex) in that network namespace';
    case 'EBADF':
      return 'the map, program or link was closed';
    case 'ENOLINK':
      return 'the link was detached (its interface is gone)';
    case 'ENOSYS':
    case 'EOPNOTSUPP':
    case 'ENOTSUPP':
      return 'the kernel does not support this BPF feature';
    case 'ENOTDIR':
      return `${path || 'a parent of the path'} is not a directory; ${MOUNT_HINT}`;
    default:
      return '';
  }
}

/** Builds a BpfError (with its hint) from its parts. */
export function bpfError(syscall: string, errno: number, path = '', detail = ''): BpfError {
  const code = errnoName(errno);
  const hint = hintFor(syscall, code, path);
  const msg = `${syscall}: ${code}${path ? ` ${path}` : ''}${hint ? `: ${hint}` : ''}${detail ? `\n${detail}` : ''}`;
  return new BpfError(msg, syscall, errno, code, path, detail, hint);
}

/** Converts what the addon threw into a BpfError; other errors (TypeErrors of bad arguments) pass through. */
export function toBpfError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof BpfError) return err;
  const e = err as Error & { errno?: unknown; syscall?: unknown; path?: unknown; detail?: unknown };
  if (typeof e.errno !== 'number' || typeof e.syscall !== 'string') return err;
  const out = bpfError(e.syscall, e.errno, typeof e.path === 'string' ? e.path : '', typeof e.detail === 'string' ? e.detail : '');
  out.stack = `${out.name}: ${out.message}\n${(e.stack ?? '').split('\n').slice(1).join('\n')}`;
  return out;
}

/** Runs an addon call, converting its failure into a BpfError. */
export function sys<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw toBpfError(err);
  }
}

/** Awaits an addon call that returns a promise, converting its failure into a BpfError. */
export async function sysAsync<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toBpfError(err);
  }
}
