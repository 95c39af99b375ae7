/**
 * The load-balancing model (Cilium's pkg/loadbalancer): a Service (name, affinity, traffic
 * policies, source ranges), its Frontends (an address the service answers on, with a type and the
 * status of its reconciliation into the LB maps) and its Backends (an address with a state and a
 * weight). The ServiceManager keeps them; a Frontend's reconciled form is a FrontendDesired.
 */
import type { Observable } from 'rxjs';
import { token } from '../../hive/token.js';
import type { DesiredTable, TableStatus } from '../../lib/reconciler/index.js';

/** Layer-4 protocol of a frontend or backend (Cilium's API spells them lower case). */
export type L4Proto = 'tcp' | 'udp' | 'any';
/** Load-balancing scope of a frontend: external (all traffic) or internal (from inside the cluster). */
export type LBScope = 'external' | 'internal';

/** A layer-3/4 address: IP, port, protocol, scope. */
export interface L3n4Addr {
  readonly ip: string;
  readonly port: number;
  readonly protocol: L4Proto;
  readonly scope: LBScope;
}

/** Service types (Cilium's ServiceSpec flags.type). */
export const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'ExternalIPs', 'HostPort', 'LoadBalancer', 'LocalRedirect'] as const;
/** A service type. */
export type ServiceType = (typeof SERVICE_TYPES)[number];
/** Traffic policy (external or internal). */
export type TrafficPolicy = 'Cluster' | 'Local';
/** Backend states (Cilium's BackendAddress.state). */
export const BACKEND_STATES = ['active', 'terminating', 'terminating-not-serving', 'quarantined', 'maintenance'] as const;
/** A backend's state: only active backends get new flows; terminating ones keep their established flows. */
export type BackendState = (typeof BACKEND_STATES)[number];
/**
 * Where a service came from: `api` (PUT /service/{id}), `k8s` (a manifest imported with `cellium
 * service import`, key `namespace/name`), `apiserver` (a Service watched live from the Kubernetes
 * apiserver, key `apiserver:namespace/name`; only the k8s-services cell changes or deletes it).
 */
export type ServiceSource = 'api' | 'k8s' | 'apiserver';

/** A service: what its frontends share. */
export interface Service {
  /** Unique key: `namespace/name` for imported manifests, `apiserver:namespace/name` for Services watched from the apiserver, `api:<id>` for one made through the API. */
  readonly key: string;
  readonly name: string;
  readonly namespace: string;
  readonly source: ServiceSource;
  /** ClientIP session affinity. */
  readonly sessionAffinity: boolean;
  /** Affinity timeout in seconds (Kubernetes' default 10800). */
  readonly sessionAffinityTimeoutSec: number;
  readonly extTrafficPolicy: TrafficPolicy;
  readonly intTrafficPolicy: TrafficPolicy;
  /** CIDRs allowed to reach LoadBalancer frontends (empty: all). */
  readonly sourceRanges: readonly string[];
}

/** A frontend as a source gives it (the manager assigns the ID). */
export interface FrontendParams {
  readonly address: L3n4Addr;
  readonly type: ServiceType;
  /** The port name (Kubernetes' ServicePort.name) selecting the backends of that port; undefined: all backends. */
  readonly portName?: string;
}

/** A frontend: an address a service answers on. `id` is the service ID (and the reverse-NAT index). */
export interface Frontend extends FrontendParams {
  readonly id: number;
  readonly serviceKey: string;
}

/** A backend of a service. */
export interface Backend {
  readonly address: L3n4Addr;
  readonly state: BackendState;
  /** Relative weight (Maglev); 0 takes no new flows. */
  readonly weight: number;
  readonly nodeName?: string;
  readonly zone?: string;
  /** The port name it serves (the EndpointSlice port's name); undefined: serves every frontend of the service. */
  readonly portName?: string;
}

/** What the LB maps must hold for one frontend: the reconciler's object. */
export interface FrontendDesired {
  readonly id: number;
  readonly address: L3n4Addr;
  readonly type: ServiceType;
  readonly serviceKey: string;
  /** The service's affinity timeout in seconds, 0 without session affinity. */
  readonly affinityTimeoutSec: number;
  readonly extTrafficPolicy: TrafficPolicy;
  readonly intTrafficPolicy: TrafficPolicy;
  readonly sourceRanges: readonly string[];
  /** The frontend's backends (sorted by address): active ones get new flows, the others keep theirs. */
  readonly backends: readonly Backend[];
}

/** A frontend with its reconciliation status. */
export interface FrontendStatus {
  readonly frontend: FrontendDesired;
  /** disabled: kept out of the LB maps, its address (or a backend) collides with the node (message: why). */
  readonly state: 'pending' | 'done' | 'error' | 'disabled';
  readonly message?: string;
}

/** A service with its frontends and backends (one source's whole view of it). */
export interface ServiceUpsert {
  readonly service: Service;
  readonly frontends: readonly FrontendParams[];
  readonly backends: readonly Backend[];
}

/** Keeps services, frontends and backends; the desired state of the LB maps. */
export interface ServiceManager {
  /** The highest service ID (IDs are 1..maxId). */
  readonly maxId: number;
  /** The desired state of every frontend, keyed by its address (`10.96.0.10:80/TCP`): what the LB reconciler writes. */
  readonly frontends: DesiredTable<FrontendDesired>;
  /** Throws LBError naming the field when `u` cannot be upserted (upsert checks it too). */
  check(u: ServiceUpsert): void;
  /** Creates or replaces a service with its frontends and backends (frontends it no longer has go); returns its frontends with their IDs. */
  upsert(u: ServiceUpsert): Frontend[];
  /**
   * Creates or replaces the frontend with service ID `id` (Cilium's PUT /service/{id}); returns
   * whether it was created. Throws LBError invalid-frontend when the address belongs to another ID.
   */
  upsertById(id: number, u: ServiceUpsert): boolean;
  /** Replaces the backends of a service (an EndpointSlice update). */
  setBackends(serviceKey: string, backends: readonly Backend[]): void;
  /** Deletes a service with its frontends; false when there was none. */
  deleteService(serviceKey: string): boolean;
  /** Deletes the frontend with this ID (and its service when it was the last); false when unknown. */
  deleteById(id: number): boolean;
  /** Every frontend with its status, by ID. */
  list(): FrontendStatus[];
  /** One frontend by ID. */
  get(id: number): FrontendStatus | undefined;
  /** A service by key. */
  service(key: string): Service | undefined;
  /** Every service (headless ones, without frontends, too). */
  allServices(): Service[];
  /** The backends of a service. */
  backends(serviceKey: string): readonly Backend[];
  /** Status of the frontends table (the frontends written or to be written; the disabled ones are not in it). */
  status(): TableStatus;
  /** The frontends kept out of the LB maps because they collide with the node, with why. */
  disabled(): { readonly frontend: string; readonly why: string }[];
  /** Emits after every change (the key of the service that changed). */
  readonly changes$: Observable<string>;
  /** Resolves once every change so far is durable in the state directory. */
  flushStore(): Promise<void>;
}

/** Token for the service manager. */
export const ServiceManagerToken = token<ServiceManager>('ServiceManager');
