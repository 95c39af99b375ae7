/** The agent API's shared, cell-independent pieces: spec, validators, client, socket path, Cilium conformance. */
export * from './errors.js';
export * from './socket-path.js';
export * from './spec.js';
export * from './http-check.js';
export * from './models.js';
export * from './transport.js';
export * from './client.js';
export * from './cilium-conformance.js';
