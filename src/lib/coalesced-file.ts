/**
 * One state file written in the background, coalesced and atomic: `schedule(render)` asks for a
 * write of what `render()` returns once the current burst of changes is over (one setImmediate),
 * and a burst of any size is one write (temporary file, fsync, rename, fsync of the directory: see
 * atomic-file.ts). `writeSync` writes now, and a background write started before it never lands
 * over it. `idle()` waits until no write is pending; `lastError` is the last write's failure,
 * cleared by the next success. A failed write is reported (`onError`) and retried with the next
 * change: the stores built on this (services, policies, identities) keep their in-memory state.
 */
import { rmSync } from 'node:fs';
import { installTemp, writeFileAtomicSync, writeTemp } from './atomic-file.js';

/** A coalescing, atomic writer of one file. */
export class CoalescedFile {
  /** Bumped by every write that starts; a background write installs only when none started after it. */
  private generation = 0;
  private render?: () => string;
  private writing?: Promise<void>;
  /** The last write's failure, cleared by the next success. */
  lastError?: Error;

  /** `onError` is told of every failed background write (the store logs it). */
  constructor(
    readonly file: string,
    private readonly onError?: (err: Error) => void,
  ) {}

  /** Writes what `render()` returns once the current burst of changes is over (the latest `render` wins). */
  schedule(render: () => string): void {
    this.render = render;
    this.writing ??= this.writeLoop();
  }

  /** Waits until every write scheduled so far is done (written, or failed: see lastError). */
  async idle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Writes `data` durably before returning; throws the file system's error (the previous file stays intact). */
  writeSync(data: string): void {
    this.generation++;
    writeFileAtomicSync(this.file, data);
    this.lastError = undefined;
  }

  private async writeLoop(): Promise<void> {
    try {
      await new Promise<void>((r) => setImmediate(r));
      while (this.render) {
        const render = this.render;
        this.render = undefined;
        const gen = ++this.generation;
        try {
          const tmp = await writeTemp(this.file, render());
          // synchronous from the check to the rename: no writeSync can land in between
          if (gen !== this.generation) rmSync(tmp, { force: true });
          else installTemp(tmp, this.file);
          this.lastError = undefined;
        } catch (err) {
          this.lastError = err as Error;
          this.onError?.(this.lastError);
        }
      }
    } finally {
      this.writing = undefined;
    }
  }
}
