/**
 * The explain cell's model: a dropped flow as explain reads it, and the explanation (the decision
 * that dropped it, and the smallest policy that would allow it, checked by a trace). The API's
 * CelliumExplanation schema has the same fields.
 */
import { token } from '../../hive/token.js';
import type { TraceSection } from '../policy/types.js';

/** One side of a flow: its security identity and labels, and what Hubble said about it. */
export interface FlowSide {
  readonly identity: number;
  /** The identity's labels (`source:key=value`). */
  readonly labels: readonly string[];
  readonly namespace?: string;
  /** `namespace/name` of its pod, when known. */
  readonly pod?: string;
  /** The local endpoint's ID (0 or absent: not an endpoint of this node). */
  readonly endpointId?: number;
  readonly ip?: string;
}

/** The L4 protocols a flow may carry, as explain names them. */
export type FlowProtocol = 'TCP' | 'UDP' | 'SCTP' | 'ICMP' | 'ICMPv6';

/** A dropped flow, read from a Hubble Flow (hubble observe -o json, or the Observer API's Flow). */
export interface DroppedFlow {
  readonly uuid?: string;
  /** RFC 3339 time of the flow, when it had one. */
  readonly time?: string;
  readonly source: FlowSide;
  readonly destination: FlowSide;
  /** undefined: the flow had no L4 the datapath decoded. */
  readonly protocol?: FlowProtocol;
  /** The destination port (0 for ICMP). */
  readonly port: number;
  readonly direction: 'ingress' | 'egress' | 'unknown';
  /** Hubble's drop reason number (flow.DropReason). */
  readonly dropReason: number;
  /** `namespace/name` of the service whose frontend is the destination. */
  readonly service?: string;
  /** The index of the interface the datapath saw the packet on (flow.interface.index). */
  readonly interfaceIndex?: number;
}

/** What kind of decision a drop reason is. */
export type DropKind = 'policy' | 'service' | 'source' | 'conntrack' | 'packet' | 'other';

/** A drop reason: Cilium's number and name, and what it means. */
export interface DropReasonInfo {
  readonly code: number;
  /** Hubble's name (flow.DropReason), e.g. POLICY_DENIED. */
  readonly name: string;
  readonly kind: DropKind;
  readonly meaning: string;
  /** What to do about it (non-policy reasons; a policy drop gets a proposal instead). */
  readonly fix?: string;
}

/** One rule section a trace considered for a direction (TraceSection), and why it did or did not decide. */
export interface ExplainedSection extends TraceSection {
  readonly why: string;
}

/** How a direction was decided. */
export type DirectionDecision = 'deny-rule' | 'allow-rule' | 'default-deny' | 'not-enforced';

/** One direction of the policy decision: egress at the source or ingress at the destination. */
export interface ExplainedDirection {
  readonly direction: 'ingress' | 'egress';
  readonly verdict: 'allowed' | 'denied';
  readonly enforced: boolean;
  readonly decision: DirectionDecision;
  /** The rules that decided (the matching deny rules, or the matching allow rules). */
  readonly rules: readonly string[];
  /** The rules selecting the direction's subject. */
  readonly selecting: readonly string[];
  readonly sections: readonly ExplainedSection[];
  /** One sentence: why this direction allowed or denied the flow. */
  readonly why: string;
}

/** The policy side of an explanation: the trace of the flow against the repository as it is. */
export interface PolicyDecision {
  readonly revision: number;
  readonly verdict: 'allowed' | 'denied';
  readonly egress: ExplainedDirection;
  readonly ingress: ExplainedDirection;
  readonly log: readonly string[];
}

/** A proposed policy and the trace of the flow with it added. */
export interface Proposal {
  readonly format: 'cilium' | 'k8s';
  /** The objects, in the order of `text`. */
  readonly objects: readonly Record<string, unknown>[];
  /** The objects as YAML documents (what `cellium policy import` or kubectl takes). */
  readonly text: string;
  /** The trace with the objects added to the repository. */
  readonly check: { readonly verdict: 'allowed' | 'denied'; readonly log: readonly string[] };
}

/** What explain says about one dropped flow. */
export interface Explanation {
  readonly flow: DroppedFlow;
  readonly reason: DropReasonInfo;
  /** One sentence: the decision that dropped the flow. */
  readonly decision: string;
  /** For policy drops: the trace, direction by direction. */
  readonly policy?: PolicyDecision;
  /** Facts the agent found (a service's backends, an endpoint's addresses). */
  readonly details: readonly string[];
  /** The policy that would allow exactly this flow, checked by a trace. */
  readonly proposal?: Proposal;
  /** Why nothing is proposed (a non-policy drop, a deny rule that would still win, a format that cannot say it). */
  readonly noProposal?: string;
  /** A candidate the check refused (the trace with it still denies). */
  readonly rejected?: Proposal;
}

/** What explain takes: a Hubble flow (or a GetFlowsResponse holding one) and the proposal's format. */
export interface ExplainRequest {
  readonly flow: unknown;
  readonly format?: 'cilium' | 'k8s';
}

/** Explains dropped flows. */
export interface FlowExplainer {
  /** Throws ExplainError naming the field on bad input. */
  explain(req: ExplainRequest): Explanation;
}

/** Token for the flow explainer. */
export const FlowExplainerToken = token<FlowExplainer>('FlowExplainer');
