/**
 * Policy: a repository of CiliumNetworkPolicy-shaped rules, a SelectorCache that tracks which
 * identities each selector selects, and the distillation of rules into an endpoint's map state.
 */
import type { Observable } from 'rxjs';
import { token } from '../../hive/token.js';
import type { PolicyEntry } from '../../datapath/types.js';
import type { Identity } from '../identity/types.js';

/** A rule as stored (CiliumNetworkPolicy `spec` shape, plus labels identifying it). */
export type PolicyRule = Readonly<Record<string, unknown>> & { readonly labels?: readonly string[] };

/** The result of a repository change. */
export interface PolicyChange {
  readonly revision: number;
  /** Identities whose endpoints must be regenerated ('all' when unknown). */
  readonly affected: ReadonlySet<number> | 'all';
  /** Rules in the repository after the change. */
  readonly rules: number;
  /** Rules added by the change (import). */
  readonly added?: number;
  /** Rules removed by the change (delete, or replaced by an import). */
  readonly deleted?: number;
}

/** What `resolve` returns for one endpoint identity. */
export interface ResolvedPolicy {
  readonly revision: number;
  readonly ingressEnforced: boolean;
  readonly egressEnforced: boolean;
  /** The map state: what the datapath is given (see datapath/types.ts PolicyEntry). */
  readonly entries: readonly PolicyEntry[];
  /** Cilium's realized policy summary for the Endpoint model. */
  readonly allowedIngressIdentities: readonly number[];
  readonly allowedEgressIdentities: readonly number[];
  readonly deniedIngressIdentities: readonly number[];
  readonly deniedEgressIdentities: readonly number[];
}

/**
 * A named port of an endpoint: a container port of its pod with a name (Cilium's k8sPorts). Named
 * ports of ingress rules resolve against the selected endpoint's own list, those of egress rules
 * against the named-port map (every endpoint the node knows, by identity).
 */
export interface NamedPort {
  readonly name: string;
  readonly port: number;
  /** IANA protocol number (TCP 6, UDP 17, SCTP 132). */
  readonly protocol: number;
}

/** One side of a trace: labels or a numeric identity. */
export type TraceSubject = { readonly labels: readonly string[] } | { readonly identity: number };

/** One section (ingress/egress entry) of a rule a trace considered, and whether the flow matched it. */
export interface TraceSection {
  /** The rule's name (its labels, or `rule #N`). */
  readonly rule: string;
  /** The entry inside the rule, e.g. `/0/ingress/1`. */
  readonly pointer: string;
  readonly deny: boolean;
  /** The peer selectors (selector text; empty: the entry selects no peer). */
  readonly peers: readonly string[];
  /** The ports as the log shows them (`80/TCP`, `any port`, `named port http = 8080/TCP`). */
  readonly ports: string;
  readonly peerMatches: boolean;
  readonly portMatches: boolean;
}

/** One direction of a trace: its verdict, the rules that decided it and, when traced, what was considered. */
export interface TraceDirection {
  readonly verdict: 'allowed' | 'denied';
  readonly enforced: boolean;
  /** The rules that decided (the matching denies, else the matching allows; none under default deny). */
  readonly rules: readonly string[];
  /** The rules selecting the direction's subject (the destination for ingress, the source for egress). */
  readonly selecting?: readonly string[];
  /** Every section of those rules in this direction, with what matched. */
  readonly sections?: readonly TraceSection[];
}

/** A trace's verdict and the rules that decided it. */
export interface TraceResult {
  readonly verdict: 'allowed' | 'denied';
  readonly ingress: TraceDirection;
  readonly egress: TraceDirection;
  readonly log: readonly string[];
}

/** What a trace may take besides its two sides and port (the repository is never changed by them). */
export interface TraceOptions {
  /**
   * Policy text (what `import` takes) evaluated as if it were imported after every rule: the trace
   * of the repository with it added (explain checks a proposed policy this way).
   */
  readonly candidates?: string;
  /**
   * The destination endpoint's named ports: ingress port names resolve against them, egress names
   * through the node's named-port map for the destination identity, as the map state does. Without
   * them a trace has identities, not endpoints, and a named port never matches.
   */
  readonly destinationPorts?: readonly NamedPort[];
}

/** A selector in the SelectorCache and the identities it selects. */
export interface CachedSelector {
  readonly selector: string;
  readonly identities: readonly number[];
  readonly users: number;
}

/** Options of an import. */
export interface ImportOptions {
  /** Rules with all these labels are replaced by the imported ones, in the same change (Cilium's replace-with-labels). */
  readonly replaceWithLabels?: readonly string[];
}

/**
 * One change of a batch: an import (its rules replace the rules with the same labels and those
 * carrying all of `replaceWithLabels`), or a delete of the rules carrying all of `delete`.
 */
export type PolicyBatchChange =
  | { readonly import: string; readonly replaceWithLabels?: readonly string[] }
  | { readonly delete: readonly string[] };

/** The policy repository. */
export interface PolicyRepository {
  /**
   * Adds rules from text (JSON or YAML: a CiliumNetworkPolicy, a CiliumClusterwideNetworkPolicy,
   * a List of them, or a bare rules array). Rules whose labels equal an existing rule's labels
   * (or that come from the same resource name/namespace) replace it. Throws PolicyError naming
   * the field on invalid input, and PolicyStoreError when the change cannot be made durable;
   * either way nothing changes. Returns once the change is in the policy store.
   */
  import(text: string, opts?: ImportOptions): PolicyChange;
  /** Deletes rules whose labels include every given label (all rules with `all`); durable like import. */
  delete(labels: readonly string[] | 'all'): PolicyChange;
  /**
   * Several imports and deletes as one change: one store write, one revision, one event, so no
   * endpoint ever sees part of it (the Kubernetes policy caches applied at once after their sync).
   * Each change acts on the rules as they were before the batch (not on each other's). Throws like
   * import (PolicyError naming the field, PolicyStoreError); nothing changes then. An empty batch
   * changes nothing and keeps the revision.
   */
  batch(changes: readonly PolicyBatchChange[]): PolicyChange;
  /** The rules (all, or those matching the labels). */
  get(labels?: readonly string[]): PolicyRule[];
  /** The current revision (> 0, bumped on every change). */
  readonly revision: number;
  /**
   * The map state for an endpoint identity; `namedPorts` are the endpoint's own (its pod's named
   * container ports): a rule's named ingress port allows the number declared under that name and
   * protocol, and nothing when none is. A named egress port allows, to each peer identity, the
   * numbers the NamedPortMap holds for it (nothing when it holds none).
   */
  resolve(identity: Identity, namedPorts?: readonly NamedPort[]): ResolvedPolicy;
  /**
   * The verdict for traffic from src to dst on dport/proto, with the deciding rules; `opts` adds
   * candidate rules (not imported) and the destination's named ports.
   */
  trace(src: TraceSubject, dst: TraceSubject, dport: number, protocol: string, opts?: TraceOptions): TraceResult;
  /** Selectors and the identities they select. */
  selectors(): CachedSelector[];
  /** Emits every change. */
  readonly changes$: Observable<PolicyChange>;
}

/** Token for the PolicyRepository. */
export const PolicyRepositoryToken = token<PolicyRepository>('PolicyRepository');

/**
 * The node's named-port map (Cilium's NamedPortMultiMap; named-port-map.ts): the endpoint cell
 * feeds it this node's endpoints, the CiliumEndpoint watch those of other nodes; the repository
 * resolves egress names through it and recomputes the endpoints a change concerns.
 */
export interface NamedPortMap {
  /** Sets what `owner` (`endpoint:<id>`, `cep:<namespace>/<name>`) contributes: its identity, named ports and addresses. */
  upsert(owner: string, identity: number, ports: readonly NamedPort[], addresses?: readonly string[]): void;
  /** Removes what `owner` contributed. */
  remove(owner: string): void;
  /** The numbers `name`/`protocol` stands for at peer `identity` (0: at any endpoint), sorted; empty when none. */
  ports(name: string, protocol: number, identity: number): number[];
  /** Registers a listener called (synchronously) with the names a change may have changed ('all': every name). */
  onChange(fn: (names: ReadonlySet<string> | 'all') => void): void;
  /**
   * Registers a source that has not listed yet (the CiliumEndpoint watch before its first sync):
   * until every such source called its `done`, the map is not `complete`. Completion reports 'all'.
   */
  pending(source: string): () => void;
  /** Whether every registered source has listed (a deny by name denies every port until then). */
  readonly complete: boolean;
  /** Every address of the endpoints of `identity` (sorted); undefined when the map knows none. */
  addresses(identity: number): readonly string[] | undefined;
  /** Whether some endpoint the map knows has `address`. */
  hasAddress(address: string): boolean;
  /**
   * Registers a listener called (synchronously) with the identities whose addresses changed and
   * the addresses that came or went (completion reports every identity that has addresses).
   */
  onAddresses(fn: (c: { readonly identities: ReadonlySet<number>; readonly addresses: ReadonlySet<string> }) => void): void;
  /** How many owners contribute. */
  readonly size: number;
}

/** Token for the node's named-port map. */
export const NamedPortMapToken = token<NamedPortMap>('NamedPortMap');

/** What the policy restore found. */
export interface PolicyRestoreOutcome {
  /** The policy store's path. */
  readonly file: string;
  /** Whether the store existed (false: the repository started empty, at revision 1). */
  readonly found: boolean;
}

/** The restore of the stored policy at agent start. */
export interface PolicyRestore {
  /**
   * Settles once the stored rules are in the repository and their CIDR identities allocated
   * (rejects when the store could not be used: the agent then does not start), with what it found
   * (void from restores that do not say). Whatever regenerates endpoints at start waits for it.
   */
  readonly done: Promise<PolicyRestoreOutcome | void>;
}

/** Token for the policy restore (the endpoint restore depends on it). */
export const PolicyRestoreToken = token<PolicyRestore>('PolicyRestore');

// Re-exported for other cells (import a cell through its index.ts or types.ts only).
export { PolicyError } from './errors.js';
