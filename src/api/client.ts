/**
 * A small typed client of the agent API (one method per operation of api/openapi.yaml), over the
 * agent's unix socket or TCP. Every method resolves with the model of the success answer and
 * rejects with ApiError (the server's message, field and Retry-After) or AgentUnreachableError.
 */
import type {
  BPFMap,
  BPFMapList,
  CelliumIPAM,
  CelliumExplainRequest,
  CelliumExplanation,
  CelliumTraceResult,
  CelliumPolicyRealized,
  ClusterNodeStatus,
  DaemonConfiguration,
  DaemonConfigurationSpec,
  Endpoint,
  EndpointChangeRequest,
  EndpointConfigurationSpec,
  EndpointConfigurationStatus,
  EndpointHealth,
  EndpointStatusLog,
  Identity,
  IdentityEndpoints,
  IPAMResponse,
  LabelConfiguration,
  Policy,
  PolicyTraceQuery,
  SelectorCache,
  Service,
  ServiceSpec,
  CelliumServiceImport,
  StatusResponse,
  IPListEntry,
  NodeID,
} from './models.js';
import { Transport, errorFromResponse, type ApiResponse, type ApiTarget, type RequestOptions, type TransportOptions } from './transport.js';

/** Options of the client. */
export type CelliumClientOptions = TransportOptions;

/** Result of a delete: `errors` is the count the agent reported with 206 (0 with 200). */
export interface DeleteResult {
  readonly errors: number;
}

/** Options of POST /ipam. */
export interface IpamAllocateOptions {
  readonly family?: 'ipv4' | 'ipv6';
  readonly owner?: string;
  readonly pool?: string;
  /** Ask for an expiring allocation (confirmed later by an endpoint). */
  readonly expiration?: boolean;
}

const enc = encodeURIComponent;

/** One record of the monitor stream (see GET /cellium/monitor). */
export interface MonitorStreamRecord {
  readonly kind: 'event' | 'lost' | 'info';
  readonly flow?: Record<string, unknown>;
  readonly count?: number;
  readonly why?: string;
  readonly message?: string;
}

/** The typed client. */
export class CelliumClient {
  readonly transport: Transport;

  constructor(target: ApiTarget, opts: CelliumClientOptions = {}) {
    this.transport = new Transport(target, opts);
  }

  /** Sends a request and returns the body of a 2xx answer; throws ApiError otherwise. */
  async call<T>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const res = await this.transport.request<T>(method, path, opts);
    if (res.status >= 400 || res.status < 200) throw errorFromResponse(res, `${method.toUpperCase()} /v1${path}`);
    return res;
  }

  /**
   * Streams the monitor (GET /cellium/monitor) until the agent ends it or `signal` aborts; each
   * record goes to `onRecord`. Throws ApiError for a refused request (400, 429).
   */
  async monitor(query: { type?: readonly string[]; 'related-to'?: readonly number[] }, onRecord: (record: MonitorStreamRecord) => void, signal?: AbortSignal): Promise<void> {
    const q = { type: query.type?.length ? [...query.type] : undefined, 'related-to': query['related-to']?.length ? [...query['related-to']] : undefined };
    await this.call('GET', '/cellium/monitor', { query: q, headers: { accept: 'application/x-ndjson' }, timeoutMs: 0, ...(signal ? { signal } : {}), onLine: (line) => onRecord(JSON.parse(line) as MonitorStreamRecord) });
  }

  private async body<T>(method: string, path: string, opts?: RequestOptions): Promise<T> {
    return (await this.call<T>(method, path, opts)).body;
  }

  private async deleted(path: string, opts?: RequestOptions): Promise<DeleteResult> {
    const res = await this.call<unknown>('DELETE', path, opts);
    return { errors: res.status === 206 && typeof res.body === 'number' ? res.body : 0 };
  }

  /** GET /healthz. `brief` asks for the agent state only. */
  status(opts: { brief?: boolean } = {}): Promise<StatusResponse> {
    return this.body('GET', '/healthz', opts.brief ? { headers: { brief: 'true' } } : {});
  }

  /** GET /config. */
  getConfig(): Promise<DaemonConfiguration> {
    return this.body('GET', '/config');
  }

  /** PATCH /config. */
  async patchConfig(spec: DaemonConfigurationSpec): Promise<void> {
    await this.call('PATCH', '/config', { body: spec });
  }

  /** GET /endpoint: all endpoints, or those whose labels include `labels`. */
  listEndpoints(labels?: readonly string[]): Promise<Endpoint[]> {
    return this.body('GET', '/endpoint', labels?.length ? { body: labels } : {});
  }

  /** DELETE /endpoint: every endpoint of a container. */
  deleteEndpointsByContainer(containerId: string): Promise<DeleteResult> {
    return this.deleted('/endpoint', { body: { 'container-id': containerId } });
  }

  /** GET /endpoint/{id} (a number or a prefixed id such as `pod-name:default/web-0`). */
  getEndpoint(id: string | number): Promise<Endpoint> {
    return this.body('GET', `/endpoint/${enc(String(id))}`);
  }

  /** PUT /endpoint/{id}: creates an endpoint; resolves with the created Endpoint. */
  createEndpoint(id: string | number, req: EndpointChangeRequest): Promise<Endpoint> {
    return this.body('PUT', `/endpoint/${enc(String(id))}`, { body: req });
  }

  /** PATCH /endpoint/{id}. */
  async patchEndpoint(id: string | number, req: EndpointChangeRequest): Promise<void> {
    await this.call('PATCH', `/endpoint/${enc(String(id))}`, { body: req });
  }

  /** DELETE /endpoint/{id}. */
  deleteEndpoint(id: string | number): Promise<DeleteResult> {
    return this.deleted(`/endpoint/${enc(String(id))}`);
  }

  /** GET /endpoint/{id}/config. */
  getEndpointConfig(id: string | number): Promise<EndpointConfigurationStatus> {
    return this.body('GET', `/endpoint/${enc(String(id))}/config`);
  }

  /** PATCH /endpoint/{id}/config. */
  async patchEndpointConfig(id: string | number, spec: EndpointConfigurationSpec): Promise<void> {
    await this.call('PATCH', `/endpoint/${enc(String(id))}/config`, { body: spec });
  }

  /** GET /endpoint/{id}/labels. */
  getEndpointLabels(id: string | number): Promise<LabelConfiguration> {
    return this.body('GET', `/endpoint/${enc(String(id))}/labels`);
  }

  /** PATCH /endpoint/{id}/labels: sets the whole user label set. */
  async setEndpointLabels(id: string | number, user: readonly string[]): Promise<void> {
    await this.call('PATCH', `/endpoint/${enc(String(id))}/labels`, { body: { user } });
  }

  /** GET /endpoint/{id}/log. */
  getEndpointLog(id: string | number): Promise<EndpointStatusLog> {
    return this.body('GET', `/endpoint/${enc(String(id))}/log`);
  }

  /** GET /endpoint/{id}/healthz. */
  getEndpointHealth(id: string | number): Promise<EndpointHealth> {
    return this.body('GET', `/endpoint/${enc(String(id))}/healthz`);
  }

  /** GET /identity: all identities, or those whose labels include `labels`. */
  listIdentities(labels?: readonly string[]): Promise<Identity[]> {
    return this.body('GET', '/identity', labels?.length ? { body: labels } : {});
  }

  /** GET /identity/{id}. */
  getIdentity(id: string | number): Promise<Identity> {
    return this.body('GET', `/identity/${enc(String(id))}`);
  }

  /** GET /identity/endpoints. */
  identityEndpoints(): Promise<IdentityEndpoints[]> {
    return this.body('GET', '/identity/endpoints');
  }

  /** GET /cluster/nodes: the nodes of the cluster (only this one without a kvstore). */
  clusterNodes(): Promise<ClusterNodeStatus> {
    return this.body('GET', '/cluster/nodes');
  }

  /** GET /ip: the ipcache (local endpoints and what other nodes published), within `cidr` when given. */
  ipList(opts: { cidr?: string } = {}): Promise<IPListEntry[]> {
    return this.body('GET', '/ip', { query: { cidr: opts.cidr } });
  }

  /** GET /node/ids: the node IDs this agent gave the cluster's nodes. */
  nodeIds(): Promise<NodeID[]> {
    return this.body('GET', '/node/ids');
  }

  /** GET /ipam (ours): the pools and every address in use (of one family when given). */
  ipam(opts: { family?: 'ipv4' | 'ipv6' } = {}): Promise<CelliumIPAM> {
    return this.body('GET', '/ipam', { query: { family: opts.family } });
  }

  /** POST /ipam: allocates the next free address(es). */
  ipamAllocate(opts: IpamAllocateOptions = {}): Promise<IPAMResponse> {
    return this.body('POST', '/ipam', {
      query: { family: opts.family, owner: opts.owner, pool: opts.pool },
      ...(opts.expiration ? { headers: { expiration: 'true' } } : {}),
    });
  }

  /** POST /ipam/{ip}: allocates a given address. */
  async ipamAllocateIP(ip: string, opts: { owner?: string; pool?: string } = {}): Promise<void> {
    await this.call('POST', `/ipam/${enc(ip)}`, { query: { owner: opts.owner, pool: opts.pool } });
  }

  /** DELETE /ipam/{ip}: releases an address. */
  async ipamRelease(ip: string, opts: { pool?: string } = {}): Promise<void> {
    await this.call('DELETE', `/ipam/${enc(ip)}`, { query: { pool: opts.pool } });
  }

  /** GET /policy: the rules (all, or those whose labels include `labels`). */
  getPolicy(labels?: readonly string[]): Promise<Policy> {
    return this.body('GET', '/policy', labels?.length ? { body: labels } : {});
  }

  /** PUT /policy: imports policy text (JSON or YAML), sent as a JSON string like Cilium's client. */
  putPolicy(text: string, opts: { replaceWithLabels?: readonly string[] } = {}): Promise<Policy> {
    return this.body('PUT', '/policy', { body: text, query: { 'replace-with-labels': opts.replaceWithLabels } });
  }

  /** DELETE /policy: the rules whose labels include all of `labels`; every rule when `labels` is 'all'. */
  deletePolicy(labels: readonly string[] | 'all'): Promise<Policy> {
    return this.body('DELETE', '/policy', { body: labels === 'all' ? [] : labels });
  }

  /** GET /policy/selectors. */
  policySelectors(): Promise<SelectorCache> {
    return this.body('GET', '/policy/selectors');
  }

  /** GET /cellium/policy/trace. */
  policyTrace(query: PolicyTraceQuery): Promise<CelliumTraceResult> {
    return this.body('GET', '/cellium/policy/trace', { query: { ...query } });
  }

  /** GET /cellium/policy/realized: how many endpoints realized `revision` (default the current one). */
  policyRealized(revision?: number): Promise<CelliumPolicyRealized> {
    return this.body('GET', '/cellium/policy/realized', { query: { revision } });
  }

  /** POST /cellium/policy/explain: which decision dropped a Hubble flow, and the policy that would allow it. */
  explainFlow(req: CelliumExplainRequest): Promise<CelliumExplanation> {
    return this.body('POST', '/cellium/policy/explain', { body: req });
  }

  /** GET /map. */
  listMaps(): Promise<BPFMapList> {
    return this.body('GET', '/map');
  }

  /** GET /map/{name}. */
  getMap(name: string): Promise<BPFMap> {
    return this.body('GET', `/map/${enc(name)}`);
  }

  /** GET /service: every service (one per frontend). */
  listServices(): Promise<Service[]> {
    return this.body('GET', '/service');
  }

  /** GET /service/{id}. */
  getService(id: number): Promise<Service> {
    return this.body('GET', `/service/${id}`);
  }

  /** PUT /service/{id}: creates (true) or updates (false) a service. */
  async putService(id: number, spec: ServiceSpec): Promise<boolean> {
    return (await this.call('PUT', `/service/${id}`, { body: spec })).status === 201;
  }

  /** DELETE /service/{id}. */
  async deleteService(id: number): Promise<void> {
    await this.call('DELETE', `/service/${id}`);
  }

  /** POST /cellium/service/import: Kubernetes Service and EndpointSlice manifests (YAML or JSON text). */
  importServices(text: string): Promise<CelliumServiceImport> {
    return this.body('POST', '/cellium/service/import', { body: text });
  }

  /** Closes idle connections (call when done, so the process can exit). */
  close(): void {
    this.transport.close();
  }
}
