/** A rule as the repository keeps it: the stored document plus its compiled selectors and ports. */
import type { Direction } from '../../datapath/types.js';
import type { Selector } from './selector.js';
import type { PolicyRule } from './types.js';

/** One protocol/port (range) of a section; protocol 0 and port 0 mean any. */
export interface PortProto {
  readonly protocol: number;
  readonly port: number;
  /** Inclusive end of a range, only when > port. */
  readonly endPort?: number;
  /**
   * A named port (port is then 0 and means nothing by itself): on ingress resolved per endpoint to
   * the number its pod declares under this name and protocol, on egress per peer identity through
   * the node's named-port map (distill.ts); unresolved it allows nothing.
   */
  readonly name?: string;
}

/** One ingress/egress (deny) entry of a rule. */
export interface Section {
  readonly direction: Direction;
  readonly deny: boolean;
  /** Peers; empty selects nothing. The wildcard selector stands for identity 0. */
  readonly peers: readonly Selector[];
  /** Ports; empty means every protocol and port. */
  readonly ports: readonly PortProto[];
  /** JSON pointer of the entry inside the rule, e.g. `/ingress/0`. */
  readonly pointer: string;
}

/** A compiled rule. */
export interface CompiledRule {
  /** Insertion sequence number (rules are evaluated and listed in this order). */
  readonly seq: number;
  /** Sorted `source:key=value` labels, derived ones included. */
  readonly labels: readonly string[];
  /** The endpoints the rule applies to. */
  readonly subject: Selector;
  readonly sections: readonly Section[];
  /** Whether selecting an endpoint puts the direction into default deny. */
  readonly defaultDeny: Readonly<Record<Direction, boolean>>;
  /** Whether an ingress section names a port (its map state then depends on the endpoint's named ports). */
  readonly namedPorts: boolean;
  /** The port names of its egress sections (its map state then depends on the node's named-port map). */
  readonly egressPortNames: readonly string[];
  /** CIDRs the rule names (their identities are allocated while the rule exists). */
  readonly cidrs: readonly string[];
  /** The rule as stored and returned by `get`. */
  readonly raw: PolicyRule;
}

/** A short name of a rule for traces and logs: its labels, or its sequence number. */
export function ruleName(r: CompiledRule): string {
  return r.labels.length ? `[${r.labels.join(', ')}]` : `rule #${r.seq}`;
}

/** Every selector a rule uses as a peer. */
export function peerSelectors(r: CompiledRule): Selector[] {
  return r.sections.flatMap((s) => s.peers);
}
