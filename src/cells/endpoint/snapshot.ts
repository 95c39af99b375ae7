/** The shape of an endpoint in the state directory (`<state-dir>/<id>/ep_config.json`). */
import type { NamedPort } from '../policy/types.js';
import type { EndpointSpec } from './spec.js';

/** What the state directory keeps of an endpoint (everything needed to restore it). */
export interface EndpointSnapshot {
  readonly version: 1;
  readonly id: number;
  readonly spec: EndpointSpec;
  readonly labels: { readonly orchestration: readonly string[]; readonly user: readonly string[] };
  readonly options: Readonly<Record<string, string>>;
  /** The pod's named container ports (absent: none), so a restored endpoint resolves named ports before Kubernetes syncs. */
  readonly namedPorts?: readonly NamedPort[];
  readonly identity?: number;
  readonly datapathHash?: string;
  readonly policyRevision?: number;
}

