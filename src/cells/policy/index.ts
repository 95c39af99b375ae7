/**
 * The policy cell (module `policy`): the PolicyRepository (CiliumNetworkPolicy rules in JSON or
 * YAML), its SelectorCache fed incrementally by IdentityAllocator.changes$, distillation into the
 * datapath's map state, and policy trace. Needs IdentityAllocatorToken (the identity cell).
 */
import { module, provide } from '../../hive/cell.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { IdentityAllocatorToken, type IdentityAllocator } from '../identity/types.js';
import { Repository } from './repository.js';
import { SelectorCache } from './selector-cache.js';
import { PolicyRepositoryToken } from './types.js';

export * from './types.js';
export { PolicyError, type PolicyErrorCode } from './errors.js';
export { Repository } from './repository.js';
export { SelectorCache } from './selector-cache.js';
export { ENTITIES, ENTITY_NAMES } from './entities.js';
export { distill, resolveDenies } from './distill.js';
export { protocolNumber } from './trace.js';
export { POD_NAMESPACE_KEY, resourceLabels } from './compile.js';
export { cidrIPCacheCell, cidrOfIdentity } from './cidr-ipcache.js';

/** Builds the repository and its selector cache; the cache stops following identities at stop. */
function newRepository(allocator: IdentityAllocator, lc: Lifecycle, log: Logger): Repository {
  const cache = new SelectorCache(allocator);
  lc.append({ name: 'selector-cache', onStop: () => cache.close() });
  return new Repository(cache, allocator, log);
}

/** The policy cell. */
export const policyCell = module(
  'policy',
  'Network policy repository',
  provide(PolicyRepositoryToken, newRepository, IdentityAllocatorToken, LifecycleToken, LoggerToken),
);
