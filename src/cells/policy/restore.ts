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
import type { PolicyRestore } from './types.js';

/** Restores the repository from the store; `done` settles with the outcome of `run`. */
export class PolicyRestorer implements PolicyRestore {
  private settle!: { resolve: () => void; reject: (err: Error) => void };
  /** See PolicyRestore. */
  readonly done: Promise<void> = new Promise((resolve, reject) => (this.settle = { resolve, reject }));

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
      await this.restore();
      this.settle.resolve();
    } catch (err) {
      this.settle.reject(err as Error);
      throw err;
    }
  }

  private async restore(): Promise<void> {
    const stored = await this.store.load();
    if (!stored) {
      this.log.info({ file: this.store.file }, 'no policy store: starting with an empty policy repository');
      return;
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
  }
}
