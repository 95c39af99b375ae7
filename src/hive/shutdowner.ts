/** Shutdowner: any cell can ask the hive to shut down, with or without an error. */
import { token } from './token.js';

/** Asks the running hive to stop. */
export interface Shutdowner {
  /** Requests shutdown; with an error the agent exits non-zero and reports it. */
  shutdown(err?: Error): void;
  /** Aborts once the hive begins to stop (a signal, a shutdown request or stop()): work not yet done should not start. */
  readonly stopping: AbortSignal;
}

/** Token for the hive's Shutdowner. */
export const ShutdownerToken = token<Shutdowner>('Shutdowner');

/** The hive's shutdown request: resolves once someone asks. */
export class ShutdownSignal implements Shutdowner {
  private resolveFn!: (err: Error | undefined) => void;
  private requested = false;
  private readonly stopper = new AbortController();
  /** See Shutdowner. */
  readonly stopping: AbortSignal = this.stopper.signal;
  /** Resolves with the error (or undefined) of the first shutdown request. */
  readonly requestedPromise: Promise<Error | undefined> = new Promise((r) => (this.resolveFn = r));

  /** See Shutdowner. */
  shutdown(err?: Error): void {
    if (this.requested) return;
    this.requested = true;
    this.stopper.abort(new Error('the agent is stopping'));
    this.resolveFn(err);
  }

  /** Whether shutdown was requested. */
  get isRequested(): boolean {
    return this.requested;
  }
}
