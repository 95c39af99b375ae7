/**
 * The API handler cells, one per API group, each depending only on what it calls: endpoint,
 * identity, IPAM, policy, services, BPF maps, agent configuration and health. Each contributes an express
 * Router to the API through ApiRoutersToken.
 */
import type { Cell } from '../../hive/cell.js';
import { configHandlersCell } from './config.js';
import { endpointHandlersCell } from './endpoint.js';
import { healthzHandlersCell } from './healthz.js';
import { identityHandlersCell } from './identity.js';
import { ipamHandlersCell } from './ipam.js';
import { mapHandlersCell } from './map.js';
import { policyHandlersCell } from './policy.js';
import { policyRealizedHandlersCell } from './policy-realized.js';
import { serviceHandlersCell } from './service.js';

export { configHandlersCell, configRouter } from './config.js';
export { endpointHandlersCell, endpointRouter, numericPathId } from './endpoint.js';
export { healthzHandlersCell, healthzRouter } from './healthz.js';
export { identityHandlersCell, identityRouter, identityModel } from './identity.js';
export { ipamHandlersCell, ipamRouter, hostAddressing, IPAM_EXPIRATION_MS, DEFAULT_POOL } from './ipam.js';
export { mapHandlersCell, mapRouter, mapModel } from './map.js';
export { policyHandlersCell, policyRouter, policyModel } from './policy.js';
export { policyRealizedHandlersCell, policyRealizedRouter, policyRealized, type PolicyRealized } from './policy-realized.js';
export { serviceHandlersCell, serviceRouter, lbHttpError } from './service.js';
export { DaemonOptionsToken, DaemonOptionsStore, normalizeOption, type DaemonOptions, type DaemonOptionsState, type PolicyEnforcement } from './daemon-config.js';
export { badField, notFound } from '../api-server/index.js';
export { toHttpError, domainErrors, bodyPointer, ENDPOINT_STATUS, IPAM_STATUS } from './errors.js';

/** Every API handler cell. */
export const apiHandlerCells: readonly Cell[] = [
  healthzHandlersCell,
  configHandlersCell,
  endpointHandlersCell,
  identityHandlersCell,
  ipamHandlersCell,
  policyHandlersCell,
  policyRealizedHandlersCell,
  mapHandlersCell,
  serviceHandlersCell,
];
