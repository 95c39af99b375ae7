/**
 * Configuration of the CiliumIdentity backend's GC, cilium-operator's flags: the grace period
 * between marking an unused identity and deleting it (`--identity-heartbeat-timeout`), and the
 * GC's leader election (`--identity-gc-lease-*`: the Lease only one agent at a time holds).
 * How often a round runs is the identity cell's `--identity-gc-interval`.
 */
import { duration, string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the CiliumIdentity GC configuration. */
export const crdIdentityConfigSchema = {
  identityHeartbeatTimeout: duration('30m', 'CRD mode: how long an identity no CiliumEndpoint names and no agent holds stays marked before the elected agent deletes it'),
  identityGcLeaseDuration: duration('15s', 'CRD mode: duration of the identity GC Lease (one agent at a time runs the GC; another takes over this long after the holder stopped renewing)'),
  identityGcLeaseNamespace: string('kube-system', 'CRD mode: namespace of the identity GC Lease (cellium-identity-gc)'),
};

/** The CiliumIdentity GC configuration values. */
export type CrdIdentityConfig = ValuesOf<typeof crdIdentityConfigSchema>;

/** Token for the CiliumIdentity GC configuration. */
export const CrdIdentityConfigToken = token<CrdIdentityConfig>('CrdIdentityConfig');
