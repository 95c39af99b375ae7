/** The hubble cell's tokens (its public types live in observer.ts, server.ts and config.ts). */
import { token } from '../../hive/token.js';
import type { HubbleObserver } from './observer.js';
import type { HubbleServer } from './server.js';

/** Token for the Hubble observer (the ring of flows and its followers). */
export const HubbleObserverToken = token<HubbleObserver>('HubbleObserver');

/** Token for the Hubble server: undefined when --enable-hubble is off. */
export const HubbleServerToken = token<HubbleServer | undefined>('HubbleServer');
