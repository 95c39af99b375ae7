/** Configuration of the identity cell. */
import { duration, oneOf, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the identity configuration. */
export const identityConfigSchema = {
  identityGcInterval: duration('15m', 'How often identities without references (e.g. restored but unused) are freed'),
  identityAllocationMode: oneOf(['crd', 'kvstore'] as const, 'crd', 'Where identities are kept cluster-wide: crd (CiliumIdentity objects in the apiserver, with Kubernetes) or kvstore (etcd, with --kvstore=etcd); crd without Kubernetes falls back to kvstore with --kvstore=etcd, else to the node\'s own file (a single node)'),
  identityAllocationTimeout: duration('10s', 'Time limit of allocating a new identity in a cluster-wide backend (etcd): past it the request fails and nothing is allocated later'),
};

/** The resolved identity configuration. */
export type IdentityConfig = ValuesOf<typeof identityConfigSchema>;

/** Token for the identity configuration. */
export const IdentityConfigToken = token<IdentityConfig>('IdentityConfig');
