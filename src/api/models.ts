/**
 * The API's models as TypeScript types, taken from the types generated from api/openapi.yaml
 * (api/generated/schema.d.ts, kept in sync by scripts/check.d/10-api-types.sh).
 */
import type { components, operations, paths } from '../../api/generated/schema.js';

export type { components, operations, paths };

type Schemas = components['schemas'];

/** Cilium's Endpoint model. */
export type Endpoint = Schemas['Endpoint'];
/** What PUT/PATCH /endpoint/{id} take. */
export type EndpointChangeRequest = Schemas['EndpointChangeRequest'];
/** Cilium's endpoint states. */
export type EndpointState = Schemas['EndpointState'];
/** An endpoint's configuration (GET /endpoint/{id}/config). */
export type EndpointConfigurationStatus = Schemas['EndpointConfigurationStatus'];
/** An endpoint's changeable configuration (PATCH /endpoint/{id}/config). */
export type EndpointConfigurationSpec = Schemas['EndpointConfigurationSpec'];
/** An endpoint's labels (GET /endpoint/{id}/labels). */
export type LabelConfiguration = Schemas['LabelConfiguration'];
/** An endpoint's user labels (PATCH /endpoint/{id}/labels). */
export type LabelConfigurationSpec = Schemas['LabelConfigurationSpec'];
/** An endpoint's status log. */
export type EndpointStatusLog = Schemas['EndpointStatusLog'];
/** An endpoint's health. */
export type EndpointHealth = Schemas['EndpointHealth'];
/** GET /ipam (ours): the pools and every address in use. */
export type CelliumIPAM = Schemas['CelliumIPAM'];
/** GET /healthz. */
export type StatusResponse = Schemas['StatusResponse'];
/** A node of the hive's health tree (StatusResponse `cellium-health`). */
export type HealthNode = Schemas['HealthNode'];
/** A controller's status. */
export type ControllerStatus = Schemas['ControllerStatus'];
/** GET /config. */
export type DaemonConfiguration = Schemas['DaemonConfiguration'];
/** PATCH /config. */
export type DaemonConfigurationSpec = Schemas['DaemonConfigurationSpec'];
/** A security identity. */
export type Identity = Schemas['Identity'];
/** GET /identity/endpoints items. */
export type IdentityEndpoints = Schemas['IdentityEndpoints'];
/** POST /ipam. */
export type IPAMResponse = Schemas['IPAMResponse'];
/** GET|PUT|DELETE /policy. */
export type Policy = Schemas['Policy'];
/** GET /policy/selectors. */
export type SelectorCache = Schemas['SelectorCache'];
/** GET /map. */
export type BPFMapList = Schemas['BPFMapList'];
/** GET /map/{name}. */
export type BPFMap = Schemas['BPFMap'];
/** POST /cellium/cni body. */
export type CniRequest = Schemas['CniRequest'];
/** GET /cellium/policy/trace. */
export type CelliumTraceResult = Schemas['CelliumTraceResult'];
/** GET /cellium/policy/realized. */
export type CelliumPolicyRealized = Schemas['CelliumPolicyRealized'];
/** POST /cellium/policy/explain's body: a dropped Hubble flow and the proposal's format. */
export type CelliumExplainRequest = Schemas['CelliumExplainRequest'];
/** What POST /cellium/policy/explain answers. */
export type CelliumExplanation = Schemas['CelliumExplanation'];
/** A 400 for a request that does not match the spec. */
export type ValidationError = Schemas['ValidationError'];
/** The query of GET /cellium/policy/trace. */
export type PolicyTraceQuery = NonNullable<operations['GetCelliumPolicyTrace']['parameters']['query']>;
/** Layer 4 protocols of the trace. */
export type TraceProtocol = NonNullable<PolicyTraceQuery['proto']>;
/** A service (one frontend with its backends and status). */
export type Service = Schemas['Service'];
/** The body of PUT /service/{id}. */
export type ServiceSpec = Schemas['ServiceSpec'];
/** A service's frontend address. */
export type FrontendAddress = Schemas['FrontendAddress'];
/** A service's backend address. */
export type BackendAddress = Schemas['BackendAddress'];
/** The answer of POST /cellium/service/import. */
export type CelliumServiceImport = Schemas['CelliumServiceImport'];
/** GET /cluster/nodes: the nodes of the cluster (kvstore mode). */
export type ClusterNodeStatus = Schemas['ClusterNodeStatus'];
/** One node of ClusterNodeStatus. */
export type NodeElement = Schemas['NodeElement'];
/** GET /ip: one ipcache entry. */
export type IPListEntry = Schemas['IPListEntry'];
/** GET /node/ids: a node's ID and addresses. */
export type NodeID = Schemas['NodeID'];
