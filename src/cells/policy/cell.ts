/** The policy cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { invoke, module, provide, providePrivate, type DepsValues } from '../../hive/cell.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { IdentityAllocatorToken } from '../identity/types.js';
import { StateDirConfigToken } from '../statedir/index.js';
import { NamedPortMultiMap } from './named-port-map.js';
import { Repository } from './repository.js';
import { PolicyRestorer } from './restore.js';
import { SelectorCache } from './selector-cache.js';
import { PolicyStore, policyStoreFile } from './store.js';
import { NamedPortMapToken, PolicyRepositoryToken, PolicyRestoreToken, type PolicyRestore } from './types.js';

const RepositoryImplToken = token<Repository>('PolicyRepositoryImpl');
const PolicyStoreToken = token<PolicyStore>('PolicyStore');

/** What the policy store is built from. */
const storeDeps = { sd: StateDirConfigToken, log: LoggerToken } as const;

/** The policy store in the state directory. */
function newStore({ sd, log }: DepsValues<typeof storeDeps>): PolicyStore {
  return new PolicyStore(policyStoreFile(sd.stateDir), log);
}

/** What the repository is built from. */
const repositoryDeps = { allocator: IdentityAllocatorToken, store: PolicyStoreToken, namedPorts: NamedPortMapToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken } as const;

/**
 * Builds the repository over the store. Its selector cache follows the identities by the observer
 * job `selector-cache-identities` from construction on, inside the allocator's `next` (identities
 * allocated while endpoints are restored, in start hooks, are selected before the allocation
 * returns); pending store writes finish at stop. Egress named ports resolve through the node's
 * named-port map, and the ipBlocks of Kubernetes NetworkPolicies select pods by the addresses it
 * holds (re-matched when they change).
 */
function newRepository({ allocator, store, namedPorts, lc, jobs, log }: DepsValues<typeof repositoryDeps>): Repository {
  // a Kubernetes ipBlock selects pods by their addresses: those of the node's endpoint map, none until it is complete (fail closed)
  const cache = new SelectorCache(allocator, (id) => (namedPorts.complete ? namedPorts.addresses(id) : undefined));
  namedPorts.onAddresses((c) => cache.onAddresses(c.identities));
  jobs.observer('selector-cache-identities', allocator.changes$, (c) => cache.onIdentity(c), { immediate: true, sync: true });
  lc.append({
    name: 'policy-repository',
    onStop: () => store.flush(),
  });
  return new Repository(cache, allocator, log, store, namedPorts);
}

/** What the restorer is built from. */
const restorerDeps = { repo: RepositoryImplToken, store: PolicyStoreToken, lc: LifecycleToken, log: LoggerToken } as const;

/** Builds the restorer; its start hook runs after the identities were loaded (the repository depends on the allocator). */
function newRestorer({ repo, store, lc, log }: DepsValues<typeof restorerDeps>): PolicyRestorer {
  const r = new PolicyRestorer(repo, store, log);
  lc.append({ name: 'policy-restore', onStart: () => r.run() });
  return r;
}

/** The repository once its restore is wired (`_restore` only orders the construction). */
const publicRepositoryDeps = { repo: RepositoryImplToken, _restore: PolicyRestoreToken } as const;

/** The policy cell. */
export const policyCell = module(
  'policy',
  'Network policy repository',
  providePrivate(PolicyStoreToken, newStore, storeDeps),
  provide(NamedPortMapToken, () => new NamedPortMultiMap()),
  providePrivate(RepositoryImplToken, newRepository, repositoryDeps),
  provide(PolicyRestoreToken, newRestorer, restorerDeps),
  // the repository is handed out only once its restore is wired: nobody can use it before the store is loaded
  provide(PolicyRepositoryToken, ({ repo }: DepsValues<typeof publicRepositoryDeps>) => repo, publicRepositoryDeps),
  // the restore runs at every start that includes the cell, whether or not anything else asks for the repository
  invoke('policy-restore', (_r: PolicyRestore) => undefined, PolicyRestoreToken),
);
