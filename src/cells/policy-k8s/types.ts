/**
 * Kubernetes policy objects as the policy-k8s translation reads them: NetworkPolicy
 * (networking.k8s.io/v1) and the result of a translation into Cellium (Cilium) rules.
 */
import type { PolicyRule } from '../policy/index.js';

/** A Kubernetes label selector (metav1.LabelSelector). */
export interface K8sLabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly { readonly key: string; readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; readonly values?: readonly string[] }[];
}

/** A NetworkPolicyPeer: podSelector and/or namespaceSelector, or ipBlock. */
export interface NetworkPolicyPeer {
  readonly podSelector?: K8sLabelSelector;
  readonly namespaceSelector?: K8sLabelSelector;
  readonly ipBlock?: { readonly cidr: string; readonly except?: readonly string[] };
}

/** A NetworkPolicyPort: protocol (default TCP), port (number, or a name resolved per selected pod; absent = every port), endPort. */
export interface NetworkPolicyPort {
  readonly protocol?: 'TCP' | 'UDP' | 'SCTP';
  readonly port?: number | string;
  readonly endPort?: number;
}

/** One ingress (`from`) or egress (`to`) rule of a NetworkPolicy. */
export interface NetworkPolicyRule {
  readonly from?: readonly NetworkPolicyPeer[];
  readonly to?: readonly NetworkPolicyPeer[];
  readonly ports?: readonly NetworkPolicyPort[];
}

/** A networking.k8s.io/v1 NetworkPolicy. */
export interface NetworkPolicy {
  readonly apiVersion: 'networking.k8s.io/v1';
  readonly kind: 'NetworkPolicy';
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly uid?: string };
  readonly spec: {
    readonly podSelector: K8sLabelSelector;
    readonly ingress?: readonly NetworkPolicyRule[];
    readonly egress?: readonly NetworkPolicyRule[];
    readonly policyTypes?: readonly ('Ingress' | 'Egress')[];
  };
}

/** What a translation produced. */
export interface Translation {
  /** Bare Cellium rules (the repository's `import` takes them as a JSON array), origin labels included. */
  readonly rules: PolicyRule[];
  /**
   * The labels every rule of the object carries (`k8s:io.cilium.k8s.policy.derived-from/name/
   * namespace/uid`): deleting by them removes the object's rules, importing with them as
   * `replaceWithLabels` replaces its previous version in one change.
   */
  readonly origin: string[];
  /**
   * Parts that could not be expressed and were left out, or were ignored (rules of a direction
   * policyTypes does not list). Leaving out only ever allows less (fail closed).
   */
  readonly warnings: string[];
}
