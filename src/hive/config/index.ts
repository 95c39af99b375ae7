/** Configuration: typed fields, duration parsing and the flag/env/file registry. */
export * from './fields.js';
export * from './duration.js';
export * from './registry.js';
