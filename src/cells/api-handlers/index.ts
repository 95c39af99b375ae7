/**
 * The API handler cells, one per API group, each depending only on what it calls: endpoint,
 * identity, IPAM, policy, BPF maps, agent configuration and health. Each contributes its routes
 * to the API server through ApiRoutesToken.
 */
import type { Cell } from '../../hive/cell.js';
import { configHandlersCell } from './config.js';
import { endpointHandlersCell } from './endpoint.js';
import { healthzHandlersCell } from './healthz.js';
import { identityHandlersCell } from './identity.js';
import { ipamHandlersCell } from './ipam.js';
import { mapHandlersCell } from './map.js';
import { policyHandlersCell } from './policy.js';

export { configHandlersCell, configRoutes } from './config.js';
export { endpointHandlersCell, endpointRoutes, numericPathId } from './endpoint.js';
export { healthzHandlersCell, healthzRoutes } from './healthz.js';
export { identityHandlersCell, identityRoutes, identityModel } from './identity.js';
export { ipamHandlersCell, ipamRoutes, hostAddressing, IPAM_EXPIRATION_MS, DEFAULT_POOL } from './ipam.js';
export { mapHandlersCell, mapRoutes, mapModel } from './map.js';
export { policyHandlersCell, policyRoutes, policyModel } from './policy.js';
export { DaemonOptionsToken, DaemonOptionsStore, normalizeOption, type DaemonOptions, type DaemonOptionsState, type PolicyEnforcement } from './daemon-config.js';
export { toHttpError, badField, notFound, bodyPointer, ENDPOINT_STATUS, IPAM_STATUS } from './errors.js';

/** Every API handler cell. */
export const apiHandlerCells: readonly Cell[] = [
  healthzHandlersCell,
  configHandlersCell,
  endpointHandlersCell,
  identityHandlersCell,
  ipamHandlersCell,
  policyHandlersCell,
  mapHandlersCell,
];
