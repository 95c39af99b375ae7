/**
 * Configuration of the CiliumEndpoint sync: Cilium's `--disable-endpoint-crd` (no CiliumEndpoints
 * at all) and how long a CNI ADD waits for its CiliumEndpoint (`--k8s-cep-create-timeout`).
 */
import { bool, duration, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the CiliumEndpoint sync configuration. */
export const endpointSyncConfigSchema = {
  disableEndpointCrd: bool(false, 'Do not write CiliumEndpoint objects (Kubernetes mode): endpoint state is then not readable from the apiserver'),
  k8sCepCreateTimeout: duration('10s', 'How long a CNI ADD waits for its pod\'s CiliumEndpoint to be written before it fails (and is rolled back)'),
};

/** The CiliumEndpoint sync configuration values. */
export type EndpointSyncConfig = ValuesOf<typeof endpointSyncConfigSchema>;

/** Token for the CiliumEndpoint sync configuration. */
export const EndpointSyncConfigToken = token<EndpointSyncConfig>('EndpointSyncConfig');
