/** Desired-state tables and their reconcilers (cilium/statedb's shape). */
export * from './table.js';
export * from './reconciler.js';
