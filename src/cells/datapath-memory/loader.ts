/**
 * The in-memory Loader: "loading" an endpoint's program records the configuration it was built
 * with, so isLoaded answers exactly as the BPF loader would for an attached program.
 */
import type { EndpointDatapathConfig, Loader } from '../../datapath/types.js';

/** One recorded load. */
export interface LoadRecord {
  readonly config: EndpointDatapathConfig;
  readonly loadedAt: string;
  /** How many times this endpoint's program was loaded. */
  readonly generation: number;
}

/** The in-memory Loader. */
export class MemoryLoader implements Loader {
  private readonly loaded = new Map<number, LoadRecord>();
  /** Every reloadEndpoint call so far, in order (endpoint IDs). */
  readonly history: number[] = [];
  /** Endpoints whose program was taken off "by hand" (detachByHand): loaded, but no longer attached. */
  private readonly detached = new Set<number>();

  /** See Loader. Honours an already aborted signal like the BPF loader. */
  async reloadEndpoint(cfg: EndpointDatapathConfig, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const prev = this.loaded.get(cfg.id);
    this.loaded.set(cfg.id, { config: structuredClone(cfg), loadedAt: new Date().toISOString(), generation: (prev?.generation ?? 0) + 1 });
    this.detached.delete(cfg.id);
    this.history.push(cfg.id);
  }

  /** See Loader. */
  async unloadEndpoint(id: number): Promise<void> {
    this.loaded.delete(id);
    this.detached.delete(id);
  }

  /** See Loader. */
  async isLoaded(cfg: EndpointDatapathConfig): Promise<boolean> {
    const rec = this.loaded.get(cfg.id);
    return rec !== undefined && !this.detached.has(cfg.id) && sameConfig(rec.config, cfg);
  }

  /** See Loader. */
  async checkAttached(id: number): Promise<string | undefined> {
    const rec = this.loaded.get(id);
    return rec && this.detached.has(id) ? `its program is no longer attached to ${rec.config.ifName}` : undefined;
  }

  /** Takes an endpoint's program off its interface behind the agent's back (what `tc filter del` does to a BPF endpoint). */
  detachByHand(id: number): void {
    if (this.loaded.has(id)) this.detached.add(id);
  }

  /** The record of an endpoint's loaded program. */
  get(id: number): LoadRecord | undefined {
    return this.loaded.get(id);
  }

  /** Every loaded endpoint's record, by endpoint ID. */
  list(): LoadRecord[] {
    return [...this.loaded.values()].sort((a, b) => a.config.id - b.config.id);
  }
}

/** Whether two configurations are equal field by field (options included). */
export function sameConfig(a: EndpointDatapathConfig, b: EndpointDatapathConfig): boolean {
  const fields = ['id', 'identity', 'ipv4', 'ipv6', 'ifName', 'ifIndex', 'mac', 'hostMac'] as const;
  if (fields.some((f) => a[f] !== b[f])) return false;
  const ao = a.options ?? {};
  const bo = b.options ?? {};
  const keys = new Set([...Object.keys(ao), ...Object.keys(bo)]);
  return [...keys].every((k) => ao[k] === bo[k]);
}
