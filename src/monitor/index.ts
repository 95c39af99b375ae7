/**
 * The monitor library (Cilium's pkg/monitor): the datapath's event layouts, their decoding, a
 * reader of the pinned ring buffer, and the line and JSON formats of `cellium monitor`.
 */
export * from './events.js';
export * from './format.js';
export * from './filter.js';
