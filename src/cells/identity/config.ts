/** Configuration of the identity cell. */
import { duration, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the identity configuration. */
export const identityConfigSchema = {
  identityGcInterval: duration('15m', 'How often identities without references (e.g. restored but unused) are freed'),
  identityAllocationTimeout: duration('10s', 'Time limit of allocating a new identity in a cluster-wide backend (etcd): past it the request fails and nothing is allocated later'),
};

/** The resolved identity configuration. */
export type IdentityConfig = ValuesOf<typeof identityConfigSchema>;

/** Token for the identity configuration. */
export const IdentityConfigToken = token<IdentityConfig>('IdentityConfig');
