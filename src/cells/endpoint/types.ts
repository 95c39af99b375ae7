/**
 * The endpoint cells' interfaces: EndpointManager (owns the set of endpoints and its indexes),
 * EndpointAPIManager (the API's entry point), and the Endpoint as other cells see it.
 */
import type { Observable } from 'rxjs';
import { groupToken, token } from '../../hive/token.js';
import type { EndpointChangeRequest, EndpointHealth, EndpointLogEntry, EndpointModel, EndpointState } from './model.js';
import type { NamedPort } from '../policy/types.js';

/** Regeneration levels. */
export type RegenerationLevel = 'no-rebuild' | 'rewrite+load';

/** An endpoint as other cells see it. */
export interface EndpointView {
  readonly id: number;
  readonly state: EndpointState;
  readonly containerId?: string;
  readonly ifName?: string;
  readonly containerIfName?: string;
  readonly ipv4?: string;
  readonly ipv6?: string;
  readonly podName?: string;
  readonly namespace?: string;
  readonly identity?: number;
  readonly labels: readonly string[];
  /** The policy revision realized in the datapath (undefined before the first build). */
  readonly realizedPolicyRevision?: number;
  /** Where its addresses came from: `delegated-plugin:<type>`, or undefined for the node pool. */
  readonly ipamSource?: string;
  /** The CNI network (netconf `name`) whose ADD made it, when recorded. */
  readonly cniNetwork?: string;
  /** The Cilium Endpoint model for the API. */
  toModel(): EndpointModel;
  /** Recent status log entries, newest last. */
  log(): readonly EndpointLogEntry[];
  health(): EndpointHealth;
  /** Queues a regeneration (coalesced while one is queued); resolves when it finished. */
  regenerate(reason: string, level?: RegenerationLevel): Promise<void>;
}

/** Owns the endpoints and their indexes; emits lifecycle events. */
export interface EndpointManager {
  /**
   * Allocates an ID (refusing an endpoint whose ID is already set), starts its event queue,
   * indexes it and emits EndpointCreated.
   */
  addEndpoint(ep: EndpointView): Promise<void>;
  /** Removes an endpoint from every index, releases its ID and emits EndpointDeleted. */
  removeEndpoint(ep: EndpointView, reason: string): Promise<void>;
  /**
   * Looks up by numeric id or Cilium's prefixed ids: `cilium-local:N`, `container-id:…`,
   * `pod-name:ns/name`, `cni-attachment-id:<container-id>:<ifname>`, `ipv4:…`, `ipv6:…`.
   * Throws EndpointError('invalid') on a malformed id.
   */
  lookup(id: string): EndpointView | undefined;
  /** Every endpoint, by id. */
  getEndpoints(): EndpointView[];
  /** Regenerates every endpoint (periodic regeneration, policy changes). */
  regenerateAll(reason: string, level?: RegenerationLevel): Promise<void>;
  /**
   * Asks the datapath now whether the endpoint's programs are attached (CNI CHECK must not trust
   * the last periodic check); a missing one is handled as that check does (BPF health fails, a
   * reload is queued). Returns what is missing, or undefined.
   */
  verifyPrograms?(id: number): Promise<string | undefined>;
  readonly created$: Observable<EndpointView>;
  readonly deleted$: Observable<EndpointView>;
  readonly restored$: Observable<EndpointView>;
}

/** Token for the EndpointManager. */
export const EndpointManagerToken = token<EndpointManager>('EndpointManager');

/** What an API call carries along (cancellation). */
export interface CallContext {
  readonly signal?: AbortSignal;
}

/** The API's entry point for endpoint changes. Errors are EndpointError with a code. */
export interface EndpointAPIManager {
  /** Creates an endpoint from a change request (PUT /endpoint/{id}). */
  createEndpoint(ctx: CallContext, req: EndpointChangeRequest): Promise<EndpointView>;
  /** Updates an endpoint from a change request (PATCH /endpoint/{id}). */
  patchEndpoint(ctx: CallContext, id: string, req: EndpointChangeRequest): Promise<EndpointView>;
  /** Deletes one endpoint (DELETE /endpoint/{id}). Throws not-found. */
  deleteEndpoint(ctx: CallContext, id: string): Promise<void>;
  /** Deletes every endpoint of a container (DELETE /endpoint with container-id); returns how many. */
  deleteEndpointsByContainerID(ctx: CallContext, containerId: string): Promise<number>;
  /** Adds and removes user labels, then regenerates (identity may change). */
  patchLabels(ctx: CallContext, id: string, add: readonly string[], del: readonly string[]): Promise<EndpointView>;
  /** Changes endpoint options (PATCH /endpoint/{id}/config), regenerating when they change the datapath. */
  patchConfig(ctx: CallContext, id: string, options: Readonly<Record<string, string>>): Promise<EndpointView>;
}

/** Token for the EndpointAPIManager. */
export const EndpointAPIManagerToken = token<EndpointAPIManager>('EndpointAPIManager');

// Re-exported for other cells (import a cell through its index.ts or types.ts only).
export { EndpointError } from './errors.js';
export type { EndpointErrorCode } from './errors.js';
export type { EndpointChangeRequest } from './model.js';
export { DEFAULT_OPTIONS, ENDPOINT_OPTIONS } from './spec.js';

/** Where a pod endpoint's orchestration labels come from (the k8s cell, in Kubernetes mode). */
export interface PodLabelSource {
  /** False when its orchestrator is not configured: then it is not asked. */
  readonly enabled: boolean;
  /** The pod's labels; waits (bounded) for a pod not seen yet, then throws naming why. */
  labelsFor(namespace: string, pod: string, signal?: AbortSignal): Promise<readonly string[]>;
  /** The pod's labels now, without waiting (undefined while it is not known). */
  current(namespace: string, pod: string): readonly string[] | undefined;
  /** The pod's named container ports now (undefined while it is not known); a source without them leaves this out. */
  namedPorts?(namespace: string, pod: string): readonly NamedPort[] | undefined;
}

/** Value group of the pod label sources (provideInto); empty without an orchestrator. */
export const PodLabelSourcesToken = groupToken<PodLabelSource>('PodLabelSources');

/**
 * A step a new endpoint's creation waits for after its first build (PUT /endpoint with
 * sync-build-endpoint, as the CNI ADD sends it): Kubernetes mode writes the pod's CiliumEndpoint.
 * A step that throws fails the creation: the endpoint is removed and the error returned.
 */
export interface EndpointCreationHook {
  /** What it does, for the error ("CiliumEndpoint"). */
  readonly name: string;
  /** Resolves once done for `ep`; throws naming why it cannot be done. */
  created(ep: EndpointView, signal?: AbortSignal): Promise<void>;
}

/** Value group of the creation hooks (provideInto); empty without an orchestrator. */
export const EndpointCreationHooksToken = groupToken<EndpointCreationHook>('EndpointCreationHooks');
