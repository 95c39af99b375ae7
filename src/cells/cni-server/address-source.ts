/**
 * Where a pod's addresses come from: one strategy, chosen once per command (choose-source.ts), with
 * three implementations: the node pool (the agent's IPAM, node-pool-source.ts), the delegated
 * plugin (the netconf's IPAM plugin, delegated-source.ts) and chained (the addresses the previous
 * plugin put in prevResult, chained-source.ts). ADD asks the source for the addresses and then
 * runs downhill; DEL, a repeated ADD and CHECK go through the source the agent's --ipam (and the
 * attachment's own record) names.
 */
import type { Family } from '../ipam/types.js';
import type { CniResultModel } from './result.js';
import type { PodAddress } from './plumbing.js';

/** What an ADD undoes on failure, in reverse: `[what, how]`. */
export type Undo = Array<[string, () => Promise<unknown> | unknown]>;

/** One of the pod's addresses as the endpoint gets it (`expirationUUID`: the node pool's pending allocation). */
export interface EndpointAddress {
  readonly ip: string;
  readonly family: Family;
  readonly expirationUUID?: string;
}

/** A route the pod gets: via a gateway, always. */
export type PodRoute = { readonly dst: string; readonly gw: string };

/** What a source gave an ADD that creates the pod's veth. */
export interface VethAddressing {
  /** One address per family, each with its gateway. */
  readonly addresses: readonly (PodAddress & EndpointAddress)[];
  /** The pod's routes (the plugin's); absent: a default route per family via its gateway. */
  readonly routes?: readonly PodRoute[];
  /** The endpoint property cellium.io/ipam-source, when the addresses are not the node pool's. */
  readonly ipamSource?: string;
  /** The node pool's addresses, which the journal records with the interface ([] for a plugin's: its DEL releases them). */
  readonly pooled: readonly { readonly ip: string; readonly owner: string }[];
}

/** The source the agent's --ipam names: the node pool or the delegated plugin (a veth ADD, CHECK, DEL). */
export interface ConfiguredSource {
  readonly kind: 'node-pool' | 'delegated-plugin';
  /**
   * Checks the netconf's `ipam` section against this source before anything runs: the delegated
   * plugin needs one (code 7 without), the node pool ignores one (a warning per network name).
   */
  prepare(): void;
  /** ADD: takes the pod's addresses; what gives them back goes on `undo` as they are taken. */
  acquire(undo: Undo): Promise<VethAddressing>;
  /** CHECK: the source's own check, after Cellium's (the plugin's CHECK; the node pool has none of its own). */
  check(): Promise<void>;
  /** DEL and a repeated ADD: removes the attachment, then gives its addresses back to where they came from. */
  remove(reason: string): Promise<void>;
}

/** Chained: the previous plugin made the pod's interface and addresses (generic-veth chaining). */
export interface ChainedSource {
  readonly kind: 'chained';
  /** The prevResult's addresses of the interface this ADD chains onto (code 7 when it has none). */
  addresses(): EndpointAddress[];
  /** The answer: the prevResult with the host side added (when it does not list it yet). */
  result(host: { readonly name: string; readonly mac: string }): CniResultModel;
}

/** Where one ADD's addresses come from. */
export type AddressSource = ConfiguredSource | ChainedSource;

/** The default route of a family via its gateway (what the pod gets when its source names no routes). */
export function defaultRoutes(addresses: readonly PodAddress[]): PodRoute[] {
  return addresses.map((a) => ({ dst: a.family === 'ipv4' ? '0.0.0.0/0' : '::/0', gw: a.gateway }));
}

/** The family of an address (`:` makes it IPv6). */
export function familyOf(ip: string): Family {
  return ip.includes(':') ? 'ipv6' : 'ipv4';
}
