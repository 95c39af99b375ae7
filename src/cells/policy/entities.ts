/**
 * Entities of fromEntities/toEntities, as selectors: `world` (2, 9, 10 and CIDR identities),
 * `cluster` (every identity that is not world, endpoints included), `host` (1), `all` (the
 * wildcard, policy key identity 0) and the other reserved identities by name.
 */
import { ReservedIdentity } from '../../datapath/types.js';
import type { Identity } from '../identity/types.js';
import { WILDCARD, type Selector } from './selector.js';
import { isWorldIdentity } from './world.js';

function entity(name: string, matches: (id: Identity) => boolean): Selector {
  return Object.freeze({ kind: 'entity' as const, key: `entity:${name}`, matches });
}

const byId = (n: number) => (id: Identity) => id.id === n;

/** Every supported entity. */
export const ENTITIES: Readonly<Record<string, Selector>> = Object.freeze({
  all: WILDCARD,
  world: entity('world', isWorldIdentity),
  'world-ipv4': entity('world-ipv4', byId(ReservedIdentity.worldIPv4)),
  'world-ipv6': entity('world-ipv6', byId(ReservedIdentity.worldIPv6)),
  cluster: entity('cluster', (id) => !isWorldIdentity(id)),
  host: entity('host', byId(ReservedIdentity.host)),
  'remote-node': entity('remote-node', byId(ReservedIdentity.remoteNode)),
  'kube-apiserver': entity('kube-apiserver', byId(ReservedIdentity.kubeApiserver)),
  health: entity('health', byId(ReservedIdentity.health)),
  init: entity('init', byId(ReservedIdentity.init)),
  unmanaged: entity('unmanaged', byId(ReservedIdentity.unmanaged)),
  ingress: entity('ingress', byId(ReservedIdentity.ingress)),
});

/** Names of the supported entities. */
export const ENTITY_NAMES: readonly string[] = Object.keys(ENTITIES);
