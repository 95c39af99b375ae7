/**
 * A BPF ELF object (libbpf): open from a file or a Buffer, set .rodata constants by name, bind
 * maps to pinned ones, load, then get program and map fds. close() frees everything the object
 * holds; attached programs stay attached through their links or tc filters.
 */
import { readFileSync } from 'node:fs';
import { bpfError, sys, sysAsync } from './errors.js';
import { loadAddon, type RawBpfObject, type RawObjectMap, type RawProgram, type RawVariable } from './native.js';

/** Options of {@link BpfObject.open}. */
export interface OpenOptions {
  /** Object name (prefix of its internal maps, e.g. `bpf_lxc`). */
  readonly name?: string;
  /** Directory where maps marked LIBBPF_PIN_BY_NAME are pinned (the agent's --bpf-root). */
  readonly pinRoot?: string;
}

const elfCache = new Map<string, Buffer>();

/** An opened BPF object. */
export class BpfObject {
  private loaded = false;

  private constructor(private readonly raw: RawBpfObject) {}

  /** Opens an object from an ELF file path or its bytes. */
  static open(source: string | Buffer, opts: OpenOptions = {}): BpfObject {
    const a = loadAddon();
    return new BpfObject(sys(() => new a.BpfObject(source, opts.name, opts.pinRoot)));
  }

  /** Opens a file whose bytes are read once per process and kept (templating without re-reading). */
  static openCached(path: string, opts: OpenOptions = {}): BpfObject {
    let elf = elfCache.get(path);
    if (!elf) {
      try {
        elf = readFileSync(path);
      } catch (err) {
        const e = err as { code?: string; errno?: number };
        if (e.code === 'ENOENT') throw bpfError('bpf_object__open_file', 2, path);
        throw err;
      }
      elfCache.set(path, elf);
    }
    return BpfObject.open(elf, opts);
  }

  /** The .rodata variables (constants) of the object. */
  variables(): RawVariable[] {
    return sys(() => this.raw.variables());
  }

  /** Sets a .rodata constant before load; `value` must have the variable's exact size. */
  setConstant(name: string, value: Buffer): void {
    sys(() => this.raw.setVariable(name, value));
  }

  /** Sets several constants. */
  setConstants(values: Readonly<Record<string, Buffer>>): void {
    for (const [name, value] of Object.entries(values)) this.setConstant(name, value);
  }

  /** The object's maps (fd -1 before load). */
  maps(): RawObjectMap[] {
    return sys(() => this.raw.maps());
  }

  /** At load, reuse the map pinned at `path` (or create and pin it there). */
  setMapPinPath(map: string, path: string): void {
    sys(() => this.raw.setMapPinPath(map, path));
  }

  /** At load, use the existing map `fd` for `map` (the caller keeps owning fd). */
  reuseMap(map: string, fd: number): void {
    sys(() => this.raw.reuseMapFd(map, fd));
  }

  /** Loads every program and creates/reuses every map (verifier log in the error's detail). */
  load(): void {
    sys(() => this.raw.load());
    this.loaded = true;
  }

  /**
   * load() on a worker thread: the verifier and JIT run off the JS thread. The object may not be
   * used until the promise settles (EBUSY).
   */
  async loadAsync(): Promise<void> {
    await sysAsync(() => this.raw.loadAsync());
    this.loaded = true;
  }

  /** Whether load() succeeded. */
  get isLoaded(): boolean {
    return this.loaded;
  }

  /** The programs (fd -1 before load). */
  programs(): RawProgram[] {
    return sys(() => this.raw.programs());
  }

  /** A loaded program's fd (owned by the object). */
  programFd(name: string): number {
    return sys(() => this.raw.programFd(name));
  }

  /**
   * Runs a loaded program on one packet (BPF_PROG_TEST_RUN; for sched_cls an Ethernet frame)
   * `repeat` times: its return value and the mean run time. The program's maps are the real ones.
   */
  testRun(name: string, data: Buffer, repeat = 1): { retval: number; durationNs: number } {
    const fd = this.programFd(name);
    return sys(() => loadAddon().progTestRun(fd, data, repeat));
  }

  /** A loaded map's fd (owned by the object). */
  mapFd(name: string): number {
    return sys(() => this.raw.mapFd(name));
  }

  /** Closes the object and its fds. */
  close(): void {
    this.raw.close();
  }
}
