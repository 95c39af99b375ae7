/** The hive's own configuration (timeouts) and the per-module built-in providers. */
import { config } from './cell.js';
import { duration, type ValuesOf } from './config/fields.js';
import { token } from './token.js';

/** Schema of the hive's own configuration. */
export const hiveConfigSchema = {
  hiveStartTimeout: duration('5m', 'Time limit for starting every start hook'),
  hiveStopTimeout: duration('1m', 'Time limit for running every stop hook'),
  hiveHookTimeout: duration('1m', 'Time limit for any single start or stop hook'),
};

/** The hive's resolved configuration. */
export type HiveConfig = ValuesOf<typeof hiveConfigSchema>;

/** Token for the hive's configuration. */
export const HiveConfigToken = token<HiveConfig>('HiveConfig');

/** The config cell the hive adds at its root. */
export const hiveConfigCell = config(HiveConfigToken, hiveConfigSchema);
