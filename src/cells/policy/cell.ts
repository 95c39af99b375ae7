/** The policy cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { invoke, module, provide, providePrivate } from '../../hive/cell.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { IdentityAllocatorToken, type IdentityAllocator } from '../identity/types.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { Repository } from './repository.js';
import { PolicyRestorer } from './restore.js';
import { SelectorCache } from './selector-cache.js';
import { PolicyStore, policyStoreFile } from './store.js';
import { PolicyRepositoryToken, PolicyRestoreToken, type PolicyRestore } from './types.js';

const RepositoryImplToken = token<Repository>('PolicyRepositoryImpl');
const PolicyStoreToken = token<PolicyStore>('PolicyStore');

/** Builds the repository over the store; the selector cache stops following identities at stop, pending store writes finish. */
function newRepository(allocator: IdentityAllocator, store: PolicyStore, lc: Lifecycle, log: Logger): Repository {
  const cache = new SelectorCache(allocator);
  lc.append({
    name: 'policy-repository',
    onStop: async () => {
      cache.close();
      await store.flush();
    },
  });
  return new Repository(cache, allocator, log, store);
}

/** Builds the restorer; its start hook runs after the identities were loaded (the repository depends on the allocator). */
function newRestorer(repo: Repository, store: PolicyStore, lc: Lifecycle, log: Logger): PolicyRestorer {
  const r = new PolicyRestorer(repo, store, log);
  lc.append({ name: 'policy-restore', onStart: () => r.run() });
  return r;
}

/** The policy cell. */
export const policyCell = module(
  'policy',
  'Network policy repository',
  providePrivate(PolicyStoreToken, (sd: StateDirConfig, log: Logger) => new PolicyStore(policyStoreFile(sd.stateDir), log), StateDirConfigToken, LoggerToken),
  providePrivate(RepositoryImplToken, newRepository, IdentityAllocatorToken, PolicyStoreToken, LifecycleToken, LoggerToken),
  provide(PolicyRestoreToken, newRestorer, RepositoryImplToken, PolicyStoreToken, LifecycleToken, LoggerToken),
  // the repository is handed out only once its restore is wired: nobody can use it before the store is loaded
  provide(PolicyRepositoryToken, (r: Repository, _restore: PolicyRestore) => r, RepositoryImplToken, PolicyRestoreToken),
  // the restore runs at every start that includes the cell, whether or not anything else asks for the repository
  invoke('policy-restore', (_r: PolicyRestore) => undefined, PolicyRestoreToken),
);
