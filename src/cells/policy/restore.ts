/**
 * The policy restore at agent start: the stored rules, revision and CIDR identity numbers go back
 * into the repository, and their CIDR identities are allocated, before any endpoint regenerates
 * (the endpoint restore waits for `done`). No store: an empty repository. A store that cannot be
 * used: the start fails with the file and the way out (never an empty repository in its place).
 */
import type { Logger } from '../../hive/logger.js';
import { PolicyError, storeUnreadable } from './errors.js';
import type { Repository } from './repository.js';
import type { PolicyStore } from './store.js';
import type { PolicyRestore, PolicyRestoreOutcome } from './types.js';

/** Restores the repository from the store; `done` settles with the outcome of `run`. */
export class PolicyRestorer implements PolicyRestore {
  private settle!: { resolve: (o: PolicyRestoreOutcome) => void; reject: (err: Error) => void };
  /** See PolicyRestore. */
  readonly done: Promise<PolicyRestoreOutcome> = new Promise((resolve, reject) => (this.settle = { resolve, reject }));

  constructor(
    private readonly repo: Repository,
    private readonly store: PolicyStore,
    private readonly log: Logger,
  ) {
    // a failed restore fails the start hook; nobody else has to be waiting for `done`
    this.done.catch(() => undefined);
  }

  /** Loads the store into the repository (the policy cell's start hook). */
  async run(): Promise<void> {
    try {
      this.settle.resolve({ file: this.store.file, found: await this.restore() });
    } catch (err) {
      this.settle.reject(err as Error);
      throw err;
    }
  }

  /** Whether there was a store. */
  private async restore(): Promise<boolean> {
    const stored = await this.store.load();
    if (!stored) {
      this.log.info({ file: this.store.file }, 'no policy store: starting with an empty policy repository');
      return false;
    }
    try {
      this.repo.restore(stored);
    } catch (err) {
      if (!(err instanceof PolicyError)) throw err;
      throw storeUnreadable(this.store.file, `the rule at /rules${err.pointer} cannot be restored (${err.problem})`);
    }
    await this.repo.settled();
    const now = this.repo.snapshot().cidrIdentities;
    const moved = Object.entries(stored.cidrIdentities).filter(([cidr, id]) => now[cidr] !== undefined && now[cidr] !== id);
    if (moved.length) this.log.warn({ cidrs: moved.map(([c]) => c) }, 'CIDR identities restored under new numbers: the stored ones were taken');
    this.log.info({ file: this.store.file, rules: stored.rules.length, revision: stored.revision }, 'policy restored from the policy store');
    return true;
  }
}
