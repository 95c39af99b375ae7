/**
 * The flow page (`cellium ui`): a browser page of the node's flows, live, read from the agent's
 * Hubble Observer API: filters like `hubble observe`'s, a service map of who talks to whom
 * coloured by verdict, and a flow's details (a drop's reason) when clicked. Served on loopback
 * only. docs/ui.md describes it.
 */
export * from './errors.js';
export * from './listen.js';
export * from './filters.js';
export * from './view.js';
export * from './server.js';
