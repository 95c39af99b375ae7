/**
 * The endpoint-audit cell's public face: what other cells and embedders may import. The worked
 * example of docs/architecture.md ("Adding a cell").
 */
export { endpointAuditCell, EndpointAuditToken } from './cell.js';
export { EndpointAudit, type AuditEvent } from './audit.js';
export { AuditConfigToken, auditConfigSchema, type AuditConfig } from './config.js';
