/** Configuration of the endpoint cell: GC and periodic regeneration intervals. */
import { duration, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the endpoint configuration (`--endpoint-gc-interval`, `--endpoint-regen-interval`). */
export const endpointConfigSchema = {
  endpointGcInterval: duration('5m', 'How often endpoints whose host interface is gone are marked, then removed on the next round (0 disables)'),
  endpointRegenInterval: duration('2m', 'How often every endpoint is regenerated (0 disables)'),
};

/** The resolved endpoint configuration. */
export type EndpointConfig = ValuesOf<typeof endpointConfigSchema>;

/** Token for the endpoint configuration. */
export const EndpointConfigToken = token<EndpointConfig>('EndpointConfig');
