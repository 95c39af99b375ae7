/** Configuration of the identity cell. */
import { duration, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the identity configuration. */
export const identityConfigSchema = {
  identityGcInterval: duration('15m', 'How often identities without references (e.g. restored but unused) are freed'),
};

/** The resolved identity configuration. */
export type IdentityConfig = ValuesOf<typeof identityConfigSchema>;

/** Token for the identity configuration. */
export const IdentityConfigToken = token<IdentityConfig>('IdentityConfig');
