/**
 * Canned API bodies shaped like the agent's answers. The spec tests check each against our spec
 * and Cilium's models; the CLI tests' fake agent serves them (after validating them again).
 */
import type {
  BPFMap,
  BPFMapList,
  CelliumIPAM,
  CelliumExplanation,
  CelliumTraceResult,
  DaemonConfiguration,
  Endpoint,
  EndpointConfigurationStatus,
  EndpointHealth,
  EndpointStatusLog,
  Identity,
  IdentityEndpoints,
  IPAMResponse,
  LabelConfiguration,
  Policy,
  SelectorCache,
  Service,
  CelliumServiceImport,
  StatusResponse,
} from '../../src/api/models.js';

const T0 = '2026-11-22T08:00:00.000Z';

/** A ready endpoint with an identity and realized policy. */
export const endpoint12: Endpoint = {
  id: 12,
  spec: { options: { Debug: 'Disabled', PolicyAuditMode: 'Disabled' }, 'label-configuration': { user: [] } },
  status: {
    state: 'ready',
    identity: { id: 31245, labels: ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default'], labelsSHA256: 'a1b2' },
    labels: {
      realized: { user: [] },
      'security-relevant': ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default'],
      derived: [],
      disabled: [],
    },
    networking: {
      addressing: [{ ipv4: '10.200.0.12', ipv6: 'fd00:200::c' }],
      'interface-name': 'lxc12ab',
      'interface-index': 42,
      mac: '02:00:00:00:00:0c',
      'host-mac': '02:00:00:00:01:0c',
      'container-interface-name': 'eth0',
    },
    policy: {
      realized: {
        'policy-revision': 3,
        id: 31245,
        'policy-enabled': 'ingress',
        'allowed-ingress-identities': [1, 31246],
        'allowed-egress-identities': [0],
        'denied-ingress-identities': [],
        'denied-egress-identities': [],
      },
      spec: { 'policy-revision': 3, id: 31245, 'policy-enabled': 'ingress' },
    },
    controllers: [
      {
        name: 'resolve-identity-12',
        uuid: 'ctrl-7',
        configuration: { interval: '5m0s', 'error-retry-base': '1s', 'error-retry': true },
        status: { 'success-count': 4, 'failure-count': 0, 'consecutive-failure-count': 0, 'last-success-timestamp': T0 },
      },
    ],
    log: [
      { timestamp: '2026-11-22T07:59:59.000Z', code: 'ok', message: 'Regenerating endpoint', state: 'regenerating' },
      { timestamp: T0, code: 'ok', message: 'Completed endpoint regeneration', state: 'ready' },
    ],
    health: { bpf: 'OK', policy: 'OK', connected: true, overallHealth: 'OK' },
    'external-identifiers': {
      'container-id': '3f6c0e2d9a',
      'cni-attachment-id': '3f6c0e2d9a:eth0',
      'pod-name': 'default/web-0',
      'k8s-pod-name': 'web-0',
      'k8s-namespace': 'default',
    },
  },
};

/** A second endpoint, still waiting for its identity. */
export const endpoint13: Endpoint = {
  id: 13,
  status: {
    state: 'waiting-for-identity',
    labels: { 'security-relevant': ['k8s:app=db'] },
    networking: { addressing: [{ ipv4: '10.200.0.13' }] },
  },
};

/** GET /healthz. */
export const statusResponse: StatusResponse = {
  cilium: { state: 'Ok', msg: 'all 14 modules healthy' },
  kubernetes: { state: 'Disabled' },
  'cellium-datapath': 'bpf',
  'datapath-mode': 'veth',
  'attach-mode': 'tcx',
  ipam: { allocations: { '10.200.0.1': 'router', '10.200.0.12': 'default/web-0' }, ipv4: ['10.200.0.0/16'], status: 'ok' },
  controllers: [
    {
      name: 'sync-policy',
      uuid: 'ctrl-1',
      configuration: { interval: '30s', 'error-retry-base': '1s', 'error-retry': true },
      status: { 'success-count': 9, 'failure-count': 1, 'consecutive-failure-count': 0, 'last-failure-msg': 'transient' },
    },
    {
      name: 'ipam-gc',
      uuid: 'ctrl-2',
      status: { 'success-count': 0, 'failure-count': 3, 'consecutive-failure-count': 3, 'last-failure-msg': 'pool busy', 'last-failure-timestamp': T0 },
    },
  ],
  'identity-range': { 'min-identity': 256, 'max-identity': 65535 },
  'bpf-maps': { maps: [{ name: 'cellium_lxc', size: 65535 }, { name: 'cellium_ipcache', size: 512000 }] },
  'cellium-health': {
    name: 'agent',
    level: 'degraded',
    message: '1 of 3 modules degraded',
    updatedAt: T0,
    children: [
      { name: 'endpoint', level: 'ok', message: 'running', updatedAt: T0, children: [] },
      { name: 'ipam', level: 'degraded', message: 'gc failing', error: 'pool busy', updatedAt: T0, children: [] },
    ],
  },
};

/** GET /config. */
export const daemonConfig: DaemonConfiguration = {
  spec: { options: { Debug: 'Disabled' }, 'policy-enforcement': 'default' },
  status: {
    realized: { options: { Debug: 'Disabled', PolicyAuditMode: 'Disabled' }, 'policy-enforcement': 'default' },
    immutable: { 'ipv4-range': '10.200.0.0/16' },
    datapathMode: 'veth',
    'ipam-mode': 'cluster-pool',
    daemonConfigurationMap: { 'api-rate-limit': '', 'enable-ipv6': false },
  },
};

/** GET /endpoint/{id}/config. */
export const endpointConfig: EndpointConfigurationStatus = {
  realized: { options: { Debug: 'Disabled', PolicyAuditMode: 'Disabled' } },
  immutable: { Conntrack: 'Enabled' },
};

/** GET /endpoint/{id}/labels. */
export const endpointLabels: LabelConfiguration = {
  spec: { user: ['app:tier=front'] },
  status: {
    realized: { user: ['app:tier=front'] },
    'security-relevant': ['k8s:app=web'],
    derived: ['k8s:pod-template-hash=abc'],
    disabled: [],
  },
};

/** GET /endpoint/{id}/log. */
export const endpointLog: EndpointStatusLog = endpoint12.status.log!;
/** GET /endpoint/{id}/healthz. */
export const endpointHealth: EndpointHealth = endpoint12.status.health!;

/** GET /identity. */
export const identities: Identity[] = [
  { id: 1, labels: ['reserved:host'] },
  { id: 31245, labels: ['k8s:io.kubernetes.pod.namespace=default', 'k8s:app=web'], labelsSHA256: 'a1b2' },
];

/** GET /identity/endpoints. */
export const identityEndpoints: IdentityEndpoints[] = [{ identity: identities[1]!, refCount: 2 }];

/** POST /ipam. */
export const ipamResponse: IPAMResponse = {
  address: { ipv4: '10.200.0.14', 'ipv4-expiration-uuid': '6a1c3e0e-3c51-4b35-8e0c-5a8a9cfc20d5' },
  ipv4: { ip: '10.200.0.14', gateway: '10.200.0.1', cidrs: ['10.200.0.0/16'], 'expiration-uuid': '6a1c3e0e-3c51-4b35-8e0c-5a8a9cfc20d5' },
  'host-addressing': { ipv4: { enabled: true, ip: '10.200.0.1', 'alloc-range': '10.200.0.0/16' }, ipv6: { enabled: false } },
};

/** GET /ipam: both pools, a pod's address, an expiring one, an endpoint's out-of-pool one. */
export const ipamView: CelliumIPAM = {
  allocations: { '10.200.0.12': 'default/web-0', '10.200.0.14': 'cellium-cli', '192.0.2.10': 'default/legacy', 'fd00:10:200::c': 'default/web-0' },
  ipv4: ['10.200.0.0/16'],
  ipv6: ['fd00:10:200::/112'],
  status: '3/131066 allocated, 1 out of pool',
  pools: [
    { name: 'default', family: 'ipv4', cidr: '10.200.0.0/16', gateway: '10.200.0.1', size: 65533, used: 2, free: 65531 },
    { name: 'default', family: 'ipv6', cidr: 'fd00:10:200::/112', gateway: 'fd00:10:200::1', size: 65534, used: 1, free: 65533 },
  ],
  addresses: [
    { ip: '10.200.0.12', family: 'ipv4', owner: 'default/web-0', pool: 'default', 'out-of-pool': false, expiring: false, 'endpoint-id': 12 },
    { ip: '10.200.0.14', family: 'ipv4', owner: 'cellium-cli', pool: 'default', 'out-of-pool': false, expiring: true, 'expiration-uuid': '6a1c3e0e-3c51-4b35-8e0c-5a8a9cfc20d5', expires: '2026-11-22T08:10:00.000Z' },
    { ip: '192.0.2.10', family: 'ipv4', owner: 'default/legacy', 'out-of-pool': true, expiring: false, 'endpoint-id': 13 },
    { ip: 'fd00:10:200::c', family: 'ipv6', owner: 'default/web-0', pool: 'default', 'out-of-pool': false, expiring: false, 'endpoint-id': 12 },
  ],
};

/** GET /policy. */
export const policy: Policy = {
  revision: 4,
  policy: JSON.stringify([{ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{}] }], labels: ['k8s:policy=allow-web'] }]),
};

/** GET /policy/selectors. */
export const selectors: SelectorCache = [
  { selector: '&LabelSelector{MatchLabels:map[any.app:web]}', identities: [31245], users: 1, labels: [{ key: 'app', value: 'web', source: 'any' }] },
  { selector: '&LabelSelector{MatchLabels:map[any.app:db]}', identities: [], users: 2 },
];

/** GET /cellium/policy/trace. */
export const traceAllowed: CelliumTraceResult = {
  verdict: 'allowed',
  egress: { verdict: 'allowed', enforced: false, rules: [] },
  ingress: { verdict: 'allowed', enforced: true, rules: ['k8s:policy=allow-web'] },
  log: ['Tracing From: [k8s:app=client] => To: [k8s:app=web] Ports: [80/TCP]', 'Final verdict: ALLOWED'],
};

/** POST /cellium/policy/explain: a policy drop, explained, with its checked proposal. */
export const explanation: CelliumExplanation = {
  flow: {
    uuid: 'f-1', source: { identity: 31244, labels: ['k8s:app=client'], pod: 'default/client-0', endpointId: 11, ip: '10.200.0.11' },
    destination: { identity: 31245, labels: ['k8s:app=web'], pod: 'default/web-0', endpointId: 12, ip: '10.200.0.12' },
    protocol: 'TCP', port: 81, direction: 'ingress', dropReason: 133,
  },
  reason: { code: 133, name: 'POLICY_DENIED', kind: 'policy', meaning: 'no policy rule allowed the flow' },
  decision: "the destination's ingress policy denied it: 1 rule selects the destination",
  policy: {
    revision: 3, verdict: 'denied', log: ['Final verdict: DENIED'],
    egress: { direction: 'egress', verdict: 'allowed', enforced: false, decision: 'not-enforced', rules: [], selecting: [], sections: [], why: 'egress is not enforced' },
    ingress: {
      direction: 'ingress', verdict: 'denied', enforced: true, decision: 'default-deny', rules: [], selecting: ['[k8s:policy=allow-web]'], why: 'none allows it',
      sections: [{ rule: '[k8s:policy=allow-web]', pointer: '/0/ingress/0', deny: false, peers: ['any:app=client'], ports: '80/TCP', peerMatches: true, portMatches: false, why: 'the peer matches, but 81/TCP is not among 80/TCP' }],
    },
  },
  details: [],
  proposal: { format: 'cilium', objects: [{ kind: 'CiliumNetworkPolicy' }], text: 'kind: CiliumNetworkPolicy\n', check: { verdict: 'allowed', log: ['Final verdict: ALLOWED'] } },
};

/** GET /map. */
export const mapList: BPFMapList = {
  maps: [
    { path: '/sys/fs/bpf/tc/globals/cellium_lxc', cache: [{ key: '10.200.0.12:0', value: 'id=12 ifindex=42', 'desired-action': 'ok' }] },
    { path: '/sys/fs/bpf/tc/globals/cellium_policy_00012', cache: [] },
  ],
};

/** GET /map/{name}. */
export const mapLxc: BPFMap = mapList.maps![0]!;

/** GET /service/{id}: a reconciled ClusterIP service with an active and a terminating backend. */
export const service7: Service = {
  spec: {
    id: 7,
    'frontend-address': { ip: '10.96.0.10', port: 80, protocol: 'tcp', scope: 'external' },
    'backend-addresses': [{ ip: '10.200.0.12', port: 8080, protocol: 'TCP', state: 'active', weight: 100 }, { ip: '10.200.0.13', port: 8080, protocol: 'TCP', state: 'terminating', weight: 100 }],
    flags: { type: 'ClusterIP', trafficPolicy: 'Cluster', extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', name: 'web', namespace: 'default' },
  },
  status: { 'cellium-state': { state: 'done' } },
};
service7.status!.realized = service7.spec;

/** POST /cellium/service/import. */
export const serviceImport: CelliumServiceImport = {
  services: [{ service: 'default/web', frontends: [{ id: 7, address: '10.96.0.10:80/TCP', type: 'ClusterIP' }], backends: 2 }],
  pending: [],
};

/** Every fixture with the operation and status it answers, for the validation tests. */
/** GET /cluster/nodes of a two-node cluster. */
export const clusterNodes = {
  self: 'default/node-a',
  'nodes-added': [
    { name: 'default/node-a', 'primary-address': { ipv4: { enabled: true, ip: '192.168.1.1', 'alloc-range': '10.1.0.0/24', 'address-type': 'InternalIP' } }, source: 'local' },
    { name: 'default/node-b', 'primary-address': { ipv4: { enabled: true, ip: '192.168.1.2', 'alloc-range': '10.1.1.0/24', 'address-type': 'InternalIP' } }, source: 'kvstore' },
  ],
  'client-id': 0,
};

/** GET /ip: a local and a remote endpoint. */
export const ipList = [
  { cidr: '10.1.0.5/32', identity: 31245, hostIP: '192.168.1.1', metadata: { source: 'local', namespace: 'default', name: 'web-1' } },
  { cidr: '10.1.1.7/32', identity: 31246, hostIP: '192.168.1.2', metadata: { source: 'kvstore', namespace: 'default', name: 'db-0' } },
];

/** GET /node/ids. */
export const nodeIds = [{ id: 1, ips: ['192.168.1.1'] }, { id: 2, ips: ['192.168.1.2'] }];

export const FIXTURES: readonly { readonly operationId: string; readonly status: number; readonly body: unknown }[] = [
  { operationId: 'GetHealthz', status: 200, body: statusResponse },
  { operationId: 'GetConfig', status: 200, body: daemonConfig },
  { operationId: 'GetEndpoint', status: 200, body: [endpoint12, endpoint13] },
  { operationId: 'GetEndpointID', status: 200, body: endpoint12 },
  { operationId: 'PutEndpointID', status: 201, body: endpoint12 },
  { operationId: 'GetEndpointIDConfig', status: 200, body: endpointConfig },
  { operationId: 'GetEndpointIDLabels', status: 200, body: endpointLabels },
  { operationId: 'GetEndpointIDLog', status: 200, body: endpointLog },
  { operationId: 'GetEndpointIDHealthz', status: 200, body: endpointHealth },
  { operationId: 'GetIdentity', status: 200, body: identities },
  { operationId: 'GetIdentityID', status: 200, body: identities[1] },
  { operationId: 'GetIdentityEndpoints', status: 200, body: identityEndpoints },
  { operationId: 'GetIpam', status: 200, body: ipamView },
  { operationId: 'GetClusterNodes', status: 200, body: clusterNodes },
  { operationId: 'GetIP', status: 200, body: ipList },
  { operationId: 'GetNodeIds', status: 200, body: nodeIds },
  { operationId: 'PostIpam', status: 201, body: ipamResponse },
  { operationId: 'GetPolicy', status: 200, body: policy },
  { operationId: 'PutPolicy', status: 200, body: policy },
  { operationId: 'DeletePolicy', status: 200, body: policy },
  { operationId: 'GetPolicySelectors', status: 200, body: selectors },
  { operationId: 'GetCelliumPolicyTrace', status: 200, body: traceAllowed },
  { operationId: 'GetCelliumPolicyRealized', status: 200, body: { revision: 9, target: 9, endpoints: 3, realized: 2, 'min-realized-revision': 8, pending: [12] } },
  { operationId: 'PostCelliumPolicyExplain', status: 200, body: explanation },
  { operationId: 'GetCelliumMonitor', status: 200, body: { kind: 'info', message: 'Listening for events (types drop, endpoints 12). Press Ctrl-C to quit' } },
  { operationId: 'GetService', status: 200, body: [service7] },
  { operationId: 'GetServiceID', status: 200, body: service7 },
  { operationId: 'PutServiceID', status: 201, body: undefined },
  { operationId: 'DeleteServiceID', status: 200, body: undefined },
  { operationId: 'PostCelliumServiceImport', status: 200, body: serviceImport },
  { operationId: 'PutServiceID', status: 460, body: '/body/frontend-address/ip: "10.96.0.300" is not an IP address; fix: give the frontend an IPv4 or IPv6 address such as 10.96.0.10' },
  { operationId: 'GetMap', status: 200, body: mapList },
  { operationId: 'GetMapName', status: 200, body: mapLxc },
  { operationId: 'DeleteEndpointID', status: 206, body: 2 },
  { operationId: 'DeleteEndpoint', status: 206, body: 1 },
  { operationId: 'PatchConfig', status: 200, body: undefined },
  { operationId: 'PatchEndpointID', status: 200, body: undefined },
  { operationId: 'PatchEndpointIDConfig', status: 200, body: undefined },
  { operationId: 'PatchEndpointIDLabels', status: 200, body: undefined },
  { operationId: 'PostIpamIP', status: 200, body: undefined },
  { operationId: 'DeleteIpamIP', status: 200, body: undefined },
  { operationId: 'GetEndpointID', status: 404, body: 'endpoint 99 not found' },
  { operationId: 'PostIpam', status: 502, body: 'IPv4 pool 10.200.0.0/16 is exhausted' },
  { operationId: 'PutEndpointID', status: 400, body: { error: { message: '/body/addressing/ipv4 must match format "ipv4"', field: '/body/addressing/ipv4', expected: 'string in format ipv4' } } },
];

/** A successful canned answer per operation (the first 2xx fixture of each), for fake agents. */
export function cannedReplies(): Record<string, { status: number; body?: unknown }> {
  const out: Record<string, { status: number; body?: unknown }> = {};
  for (const f of FIXTURES) {
    if (f.status < 300 && !(f.operationId in out)) out[f.operationId] = f.body === undefined ? { status: f.status } : { status: f.status, body: f.body };
  }
  return out;
}
