/**
 * Reserved identities with Cilium's numbers and labels (pkg/identity/numericidentity.go), and the
 * mapping of special label sets to them.
 */
import { ReservedIdentity } from '../../datapath/types.js';
import { formatLabels, parseLabel, type Label } from '../../lib/labels.js';
import type { Identity } from './types.js';

/** Reserved identity names (the `reserved:` label key) and numbers. */
export const RESERVED: readonly (readonly [name: string, id: number])[] = [
  ['host', ReservedIdentity.host],
  ['world', ReservedIdentity.world],
  ['unmanaged', ReservedIdentity.unmanaged],
  ['health', ReservedIdentity.health],
  ['init', ReservedIdentity.init],
  ['remote-node', ReservedIdentity.remoteNode],
  ['kube-apiserver', ReservedIdentity.kubeApiserver],
  ['ingress', ReservedIdentity.ingress],
  ['world-ipv4', ReservedIdentity.worldIPv4],
  ['world-ipv6', ReservedIdentity.worldIPv6],
];

/** Builds an identity object from sorted labels. */
export function makeIdentity(id: number, labelSet: readonly Label[], reserved: boolean): Identity {
  const sorted = formatLabels(labelSet);
  return Object.freeze({ id, labels: Object.freeze(sorted), labelSet: Object.freeze(sorted.map(parseLabel)), reserved });
}

/** The reserved identities, by number. */
export const reservedIdentities: ReadonlyMap<number, Identity> = new Map(
  RESERVED.map(([name, id]) => [id, makeIdentity(id, [{ source: 'reserved', key: name, value: '' }], true)]),
);

const byName = new Map(RESERVED.map(([name, id]) => [name, id]));

/**
 * The reserved identity a label set stands for, like Cilium's LookupReservedIdentityByLabels:
 * an empty set is `init` (labels not known yet), any set with `reserved:host` is the host, and a
 * set of exactly one reserved label is that identity.
 */
export function reservedFor(ls: readonly Label[]): Identity | undefined {
  if (ls.length === 0) return reservedIdentities.get(ReservedIdentity.init);
  if (ls.some((l) => l.source === 'reserved' && l.key === 'host')) return reservedIdentities.get(ReservedIdentity.host);
  if (ls.length === 1 && ls[0]!.source === 'reserved') {
    const id = byName.get(ls[0]!.key);
    return id === undefined ? undefined : reservedIdentities.get(id);
  }
  return undefined;
}
