/** The endpoint-audit cell's configuration: one flag, `--endpoint-audit-size`. */
import { int, token, type ValuesOf } from '../../../src/hive/index.js';

/** The schema: each key becomes a flag (`endpointAuditSize` → `--endpoint-audit-size`). */
export const auditConfigSchema = {
  endpointAuditSize: int(100, 'How many endpoint lifecycle events the audit keeps (oldest dropped first)', { min: 1, max: 100_000 }),
};

/** The resolved values. */
export type AuditConfig = ValuesOf<typeof auditConfigSchema>;

/** Token for the resolved values. */
export const AuditConfigToken = token<AuditConfig>('EndpointAuditConfig');
