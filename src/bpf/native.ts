/**
 * Loads the bpf-loader-native addon (built by scripts/build.d/20-addon.sh) and types its raw API;
 * finds the BPF objects built by scripts/build.d/30-bpf.sh; says whether BPF is usable here
 * ({@link bpfAvailable}) so the agent can fall back to the memory datapath.
 */
import { packageRoot as cellium } from '../lib/package-root.js';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** A .rodata variable of an object. */
export interface RawVariable { name: string; offset: number; size: number }
/** A map of an object (fd -1 before load). */
export interface RawObjectMap { name: string; type: number; keySize: number; valueSize: number; maxEntries: number; flags: number; pinPath: string | null; fd: number }
/** A program of an object (fd -1 before load). */
export interface RawProgram { name: string; section: string; type: number; fd: number }
/** Map info from the kernel. */
export interface RawMapInfo { type: number; id: number; keySize: number; valueSize: number; maxEntries: number; flags: number; name: string }
/** Link info from the kernel (ifindex/attachType for tcx links; cgroupId/attachType for cgroup links). */
export interface RawLinkInfo { id: number; type: number; progId: number; ifindex: number; attachType: number; cgroupId?: number }
/** Program info from the kernel. */
export interface RawProgInfo { id: number; type: number; name: string; tag: string; mapIds: number[]; verifiedInsns: number }

/** The addon's BpfObject class. */
export interface RawBpfObject {
  variables(): RawVariable[];
  setVariable(name: string, value: Buffer): void;
  maps(): RawObjectMap[];
  setMapPinPath(name: string, path: string | null): void;
  reuseMapFd(name: string, fd: number): void;
  load(): void;
  loadAsync(): Promise<void>;
  programs(): RawProgram[];
  programFd(name: string): number;
  mapFd(name: string): number;
  close(): void;
}

/** The addon's RingReader class: non-blocking reads of a ring buffer map. */
export interface RawRingReader {
  consume(): Buffer[];
  close(): void;
}

/** The addon's exports (all synchronous; failures throw Errors with syscall/errno/code/path/detail). */
export interface BpfAddon {
  libbpfVersion: string;
  BpfObject: new (source: string | Buffer, name?: string, pinRoot?: string) => RawBpfObject;
  RingReader: new (mapFd: number) => RawRingReader;
  mapCreate(type: number, name: string, keySize: number, valueSize: number, maxEntries: number, flags: number, innerMapFd?: number): number;
  objGet(path: string): number;
  objPin(fd: number, path: string): void;
  close(fd: number): void;
  mapInfo(fd: number): RawMapInfo;
  mapLookup(fd: number, key: Buffer, value: Buffer): boolean;
  mapUpdate(fd: number, key: Buffer, value: Buffer, flags: number): void;
  mapDelete(fd: number, key: Buffer): boolean;
  /** mapUpdate on a libuv worker (a map-of-maps slot's write waits for an RCU grace period). */
  mapUpdateAsync(fd: number, key: Buffer, value: Buffer, flags: number): Promise<boolean>;
  /** mapDelete on a libuv worker; false when the key was absent. */
  mapDeleteAsync(fd: number, key: Buffer): Promise<boolean>;
  mapNextKey(fd: number, key: Buffer | null, next: Buffer): boolean;
  mapLookupBatch(fd: number, inBatch: Buffer | null, outBatch: Buffer, keys: Buffer, values: Buffer, count: number): [number, boolean];
  mapUpdateBatch(fd: number, keys: Buffer, values: Buffer, count: number, flags: number): number;
  mapUpdateBatchAsync(fd: number, keys: Buffer, values: Buffer, count: number, flags: number): Promise<boolean>;
  mapDeleteBatch(fd: number, keys: Buffer, count: number): number;
  mapDeleteKeys(fd: number, keys: Buffer, count: number): number;
  numPossibleCpus(): number;
  tcxAttach(progFd: number, ifindex: number, ingress: boolean, netns?: string): Promise<number>;
  tcxQuery(ifindex: number, ingress: boolean, netns?: string): number[];
  linkUpdate(linkFd: number, progFd: number): void;
  linkDetach(linkFd: number): void;
  linkInfo(fd: number): RawLinkInfo;
  progInfo(fd: number): RawProgInfo;
  progGetFdById(id: number): number;
  progTestRun(fd: number, data: Buffer, repeat?: number): { retval: number; durationNs: number };
  mapGetFdById(id: number): number;
  cgroupAttach(progFd: number, cgroupPath: string, attachType: number): number;
  cgroupQuery(cgroupPath: string, attachType: number): number[];
  tcAttach(progFd: number, ifindex: number, ingress: boolean, handle: number, priority: number, replace: boolean, netns?: string): Promise<number>;
  tcQuery(ifindex: number, ingress: boolean, handle: number, priority: number, netns?: string): number;
  tcDetach(ifindex: number, ingress: boolean, handle: number, priority: number, netns?: string): boolean;
  isBpffs(path: string): boolean;
  mountBpffs(path: string): void;
}

/** The repository (or package) root (src/lib/package-root.ts); the working directory when not inside it. */
export function packageRoot(): string {
  return cellium() ?? process.cwd();
}

/** Path of the built addon. */
export function addonPath(): string {
  return join(packageRoot(), 'bpf-loader-native', 'build', 'Release', 'cellium_bpf.node');
}

/** Path of a built BPF object, e.g. objectPath('bpf_lxc') -> <root>/build/bpf/bpf_lxc.o. */
export function objectPath(name: string): string {
  return join(packageRoot(), 'build', 'bpf', `${name}.o`);
}

let loaded: BpfAddon | undefined;
let loadError: string | undefined;

/** Loads the addon once; throws an Error saying why when it cannot be loaded. */
export function loadAddon(): BpfAddon {
  if (loaded) return loaded;
  if (loadError) throw new Error(loadError);
  const path = addonPath();
  if (!existsSync(path)) {
    loadError = `bpf-loader-native addon not built (${path} missing): run npm run build (needs libbpf-dev)`;
    throw new Error(loadError);
  }
  try {
    loaded = createRequire(import.meta.url)(path) as BpfAddon;
  } catch (err) {
    loadError = `bpf-loader-native addon does not load (${path}): ${(err as Error).message}`;
    throw new Error(loadError, { cause: err });
  }
  return loaded;
}

/** Whether BPF can be used here, and why not when it cannot. */
export interface BpfAvailability {
  readonly ok: boolean;
  readonly reason?: string;
}

let availability: BpfAvailability | undefined;

/**
 * Whether the BPF datapath can run here: the addon loads, the bpf_lxc object is built, and the
 * bpf() syscall works for this process (a one-entry array map is created and closed). Cached.
 */
export function bpfAvailable(): BpfAvailability {
  if (availability) return availability;
  availability = probe();
  return availability;
}

function probe(): BpfAvailability {
  let addon: BpfAddon;
  try {
    addon = loadAddon();
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
  const obj = objectPath('bpf_lxc');
  if (!existsSync(obj)) return { ok: false, reason: `BPF object missing (${obj}): run npm run build (needs clang)` };
  try {
    addon.close(addon.mapCreate(2, 'cellium_probe', 4, 4, 1, 0));
  } catch (err) {
    const e = err as { code?: string };
    const why = e.code === 'EPERM' ? 'needs root or CAP_BPF' : (err as Error).message;
    return { ok: false, reason: `bpf() not permitted: ${why}` };
  }
  return { ok: true };
}
