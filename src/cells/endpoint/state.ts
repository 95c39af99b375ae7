/**
 * The endpoint state machine, as Cilium's pkg/endpoint setState / BuilderSetStateLocked: which
 * state may follow which. Everyone may use the `set` table; the regeneration builder additionally
 * moves waiting-to-regenerate or restoring -> regenerating -> ready.
 */
import type { EndpointState } from './model.js';

/** A stored state (`not-ready` is only ever reported, never stored). */
export type StoredState = Exclude<EndpointState, 'not-ready'>;

/** Every stored state, in Cilium's order. */
export const STORED_STATES: readonly StoredState[] = [
  'waiting-for-identity', 'ready', 'waiting-to-regenerate', 'regenerating', 'restoring', 'disconnecting', 'disconnected', 'invalid',
];

/** The "from" of a brand-new endpoint (Cilium's empty state). */
export const NEW = 'new' as const;

/** Transitions allowed through setState, keyed by the current state. */
export const TRANSITIONS: Readonly<Record<StoredState | typeof NEW, readonly StoredState[]>> = {
  [NEW]: ['waiting-for-identity', 'restoring'],
  'waiting-for-identity': ['ready', 'disconnecting', 'invalid'],
  ready: ['waiting-for-identity', 'disconnecting', 'waiting-to-regenerate', 'restoring'],
  'waiting-to-regenerate': ['disconnecting', 'restoring'],
  regenerating: ['waiting-for-identity', 'disconnecting', 'waiting-to-regenerate', 'restoring'],
  restoring: ['disconnecting', 'restoring'],
  disconnecting: ['disconnected'],
  disconnected: [],
  invalid: [],
};

/** The builder's own moves (BuilderSetStateLocked), keyed by the current state. */
export const BUILDER_TRANSITIONS: Readonly<Partial<Record<StoredState, readonly StoredState[]>>> = {
  'waiting-to-regenerate': ['regenerating'],
  restoring: ['regenerating'],
  regenerating: ['ready'],
};

/** Whether `to` may follow `from` through setState. */
export function canTransition(from: StoredState | typeof NEW, to: StoredState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Whether the regeneration builder may move from `from` to `to`. */
export function canBuilderTransition(from: StoredState | typeof NEW, to: StoredState): boolean {
  return from !== NEW && (BUILDER_TRANSITIONS[from]?.includes(to) ?? false);
}

/** Whether an endpoint in this state is gone or going (no more work may be queued). */
export function isTerminating(s: StoredState | typeof NEW): boolean {
  return s === 'disconnecting' || s === 'disconnected' || s === 'invalid';
}
