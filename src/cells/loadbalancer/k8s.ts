/**
 * Kubernetes objects to services, the way Cilium's Kubernetes reflector translates them: a
 * `v1/Service` gives the service (affinity, traffic policies, source ranges) and its frontends (one
 * per ClusterIP × port, ExternalIPs, LoadBalancer ingress IPs; headless services have none; a
 * NodePort or LoadBalancer service's nodePorts give NodePort frontends on the surrogate addresses
 * 0.0.0.0:nodePort and [::]:nodePort, one per IP family of the service); a
 * `discovery.k8s.io/v1/EndpointSlice` gives backends (one per address × port, named like the
 * Service port they serve, so named target ports resolve through the slice). Endpoint conditions:
 * ready (or unset) → active; serving and terminating → terminating (keeps its flows, gets no new
 * ones); neither → not a backend. A future Kubernetes watcher calls the same functions.
 */
import { parseYamlDocuments, YamlInputError } from '../../lib/yaml-documents.js';
import { canonicalIP, parseProto, validPort } from './addr.js';
import { invalidField } from './errors.js';
import type { Backend, FrontendParams, L4Proto, Service, ServiceType } from './types.js';

/** A Service translated: the service and its frontends. */
export interface K8sService {
  readonly service: Service;
  readonly frontends: readonly FrontendParams[];
}

/** An EndpointSlice translated: the service it belongs to and its backends. */
export interface K8sEndpointSlice {
  readonly serviceKey: string;
  readonly name: string;
  readonly backends: readonly Backend[];
}

/** What one manifest file holds. */
export interface K8sManifests {
  readonly services: readonly K8sService[];
  readonly slices: readonly K8sEndpointSlice[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Kubernetes' default ClientIP affinity timeout (3 hours). */
export const DEFAULT_AFFINITY_TIMEOUT_SEC = 10800;

/** Parses a file of manifests (YAML or JSON, several documents, `kind: List` too); errors name the document and field. */
export function parseManifests(text: string): K8sManifests {
  const services: K8sService[] = [];
  const slices: K8sEndpointSlice[] = [];
  let docs;
  try {
    docs = parseYamlDocuments(text);
  } catch (err) {
    if (!(err instanceof YamlInputError)) throw err;
    throw invalidField(`document ${err.document}`, `is not YAML or JSON (${err.problem})`, 'fix the syntax of the manifest (no key twice, no alias bombs, at most 100 levels deep)');
  }
  for (const { document: n, value: v } of docs) {
    const items = isObj(v) && v.kind === 'List' && Array.isArray(v.items) ? v.items.map((it, i) => [`document ${n} /items/${i}`, it] as const) : [[`document ${n}`, v] as const];
    for (const [at, it] of items) {
      if (!isObj(it)) throw invalidField(at, 'is not an object', 'give Kubernetes objects (apiVersion, kind, metadata, spec)');
      if (it.kind === 'Service' && it.apiVersion === 'v1') services.push(translateService(it, at));
      else if (it.kind === 'EndpointSlice' && it.apiVersion === 'discovery.k8s.io/v1') slices.push(translateEndpointSlice(it, at));
      else throw invalidField(`${at} /kind`, `${JSON.stringify(it.apiVersion)} ${JSON.stringify(it.kind)} is not supported`, 'give v1 Service or discovery.k8s.io/v1 EndpointSlice objects');
    }
  }
  return { services, slices };
}

function meta(o: Obj, at: string): { name: string; namespace: string } {
  const m = o.metadata;
  if (!isObj(m) || typeof m.name !== 'string' || !m.name) throw invalidField(`${at} /metadata/name`, 'is missing', 'give the object a metadata.name');
  if (m.namespace !== undefined && typeof m.namespace !== 'string') throw invalidField(`${at} /metadata/namespace`, 'is not a string', 'give a namespace name');
  return { name: m.name, namespace: (m.namespace as string | undefined) || 'default' };
}

function proto(v: unknown, at: string): L4Proto {
  if (v === undefined) return 'tcp';
  const p = parseProto(v);
  if (!p || p === 'any') throw invalidField(at, `${JSON.stringify(v)} is not a supported protocol`, 'give TCP or UDP');
  return p;
}

function ip(v: unknown, at: string): string {
  const c = typeof v === 'string' ? canonicalIP(v) : undefined;
  if (!c) throw invalidField(at, `${JSON.stringify(v)} is not an IP address`, 'give an IPv4 or IPv6 address');
  return c;
}

function strings(v: unknown, at: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw invalidField(at, 'is not a list of strings', 'give a list of addresses');
  return v as string[];
}

/** Translates a `v1/Service`; `at` names the document in errors. */
export function translateService(o: Obj, at = 'Service'): K8sService {
  const { name, namespace } = meta(o, at);
  const spec = o.spec;
  if (!isObj(spec)) throw invalidField(`${at} /spec`, 'is missing', 'give the Service a spec');
  const ports = spec.ports ?? [];
  if (!Array.isArray(ports)) throw invalidField(`${at} /spec/ports`, 'is not a list', 'give a list of {name, port, protocol, targetPort}');
  const affinity = spec.sessionAffinity === 'ClientIP';
  if (spec.sessionAffinity !== undefined && spec.sessionAffinity !== 'ClientIP' && spec.sessionAffinity !== 'None') throw invalidField(`${at} /spec/sessionAffinity`, `${JSON.stringify(spec.sessionAffinity)} is not ClientIP or None`, 'give ClientIP or None');
  const cfg = isObj(spec.sessionAffinityConfig) && isObj(spec.sessionAffinityConfig.clientIP) ? spec.sessionAffinityConfig.clientIP.timeoutSeconds : undefined;
  if (cfg !== undefined && (!Number.isInteger(cfg) || (cfg as number) < 1 || (cfg as number) > 86400)) throw invalidField(`${at} /spec/sessionAffinityConfig/clientIP/timeoutSeconds`, `${JSON.stringify(cfg)} is not 1..86400`, 'give seconds between 1 and 86400');
  const policy = (v: unknown, field: string): 'Cluster' | 'Local' => {
    if (v === undefined) return 'Cluster';
    if (v === 'Cluster' || v === 'Local') return v;
    throw invalidField(`${at} /spec/${field}`, `${JSON.stringify(v)} is not Cluster or Local`, 'give Cluster or Local');
  };
  const service: Service = {
    key: `${namespace}/${name}`,
    name,
    namespace,
    source: 'k8s',
    sessionAffinity: affinity,
    sessionAffinityTimeoutSec: affinity ? ((cfg as number | undefined) ?? DEFAULT_AFFINITY_TIMEOUT_SEC) : 0,
    extTrafficPolicy: policy(spec.externalTrafficPolicy, 'externalTrafficPolicy'),
    intTrafficPolicy: policy(spec.internalTrafficPolicy, 'internalTrafficPolicy'),
    sourceRanges: strings(spec.loadBalancerSourceRanges, `${at} /spec/loadBalancerSourceRanges`),
  };
  const clusterIPs = strings(spec.clusterIPs, `${at} /spec/clusterIPs`);
  if (!clusterIPs.length && spec.clusterIP !== undefined) clusterIPs.push(String(spec.clusterIP));
  const addrs: [string, ServiceType, string][] = [];
  for (const [i, c] of clusterIPs.entries()) {
    if (c === 'None' || c === '') continue;
    addrs.push([ip(c, `${at} /spec/clusterIPs/${i}`), 'ClusterIP', '']);
  }
  for (const [i, e] of strings(spec.externalIPs, `${at} /spec/externalIPs`).entries()) addrs.push([ip(e, `${at} /spec/externalIPs/${i}`), 'ExternalIPs', '']);
  const ingress = isObj(o.status) && isObj(o.status.loadBalancer) && Array.isArray(o.status.loadBalancer.ingress) ? o.status.loadBalancer.ingress : [];
  for (const [i, g] of ingress.entries()) if (isObj(g) && g.ip !== undefined) addrs.push([ip(g.ip, `${at} /status/loadBalancer/ingress/${i}/ip`), 'LoadBalancer', '']);
  const svcType = serviceType(spec.type, `${at} /spec/type`);
  const surrogates = svcType === 'NodePort' || svcType === 'LoadBalancer' ? nodePortSurrogates(spec, addrs.filter((a) => a[1] === 'ClusterIP').map((a) => a[0]), at) : [];
  const frontends: FrontendParams[] = [];
  for (const [j, p] of ports.entries()) {
    const pat = `${at} /spec/ports/${j}`;
    if (!isObj(p)) throw invalidField(pat, 'is not an object', 'give {name, port, protocol, targetPort}');
    if (!validPort(p.port)) throw invalidField(`${pat}/port`, `${JSON.stringify(p.port)} is not a port`, 'give a port between 1 and 65535');
    if (ports.length > 1 && (typeof p.name !== 'string' || !p.name)) throw invalidField(`${pat}/name`, 'is missing on a service with several ports', 'name every port (Kubernetes requires it)');
    const protocol = proto(p.protocol, `${pat}/protocol`);
    const portName = (p.name as string | undefined) ?? '';
    for (const [addr, type] of addrs) frontends.push({ address: { ip: addr, port: p.port, protocol, scope: 'external' }, type, portName });
    const np = nodePort(p.nodePort, svcType, spec.allocateLoadBalancerNodePorts, `${pat}/nodePort`);
    if (np !== undefined) for (const addr of surrogates) frontends.push({ address: { ip: addr, port: np, protocol, scope: 'external' }, type: 'NodePort', portName });
  }
  return { service, frontends };
}

/** Kubernetes' Service types. */
const K8S_SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const;
type K8sServiceType = (typeof K8S_SERVICE_TYPES)[number];

function serviceType(v: unknown, at: string): K8sServiceType {
  if (v === undefined) return 'ClusterIP';
  if ((K8S_SERVICE_TYPES as readonly unknown[]).includes(v)) return v as K8sServiceType;
  throw invalidField(at, `${JSON.stringify(v)} is not a Service type`, `give one of ${K8S_SERVICE_TYPES.join(', ')}`);
}

/**
 * The surrogate addresses of a NodePort or LoadBalancer service's node ports (Cilium's reflector):
 * 0.0.0.0 for IPv4 and :: for IPv6, per spec.ipFamilies, else per the families of its cluster
 * IPs, else IPv4 alone.
 */
function nodePortSurrogates(spec: Obj, clusterIPs: readonly string[], at: string): string[] {
  const fams = strings(spec.ipFamilies, `${at} /spec/ipFamilies`);
  for (const [i, f] of fams.entries()) if (f !== 'IPv4' && f !== 'IPv6') throw invalidField(`${at} /spec/ipFamilies/${i}`, `${JSON.stringify(f)} is not IPv4 or IPv6`, 'give IPv4 and/or IPv6');
  const v6 = fams.length ? fams.includes('IPv6') : clusterIPs.some((c) => c.includes(':'));
  const v4 = fams.length ? fams.includes('IPv4') : clusterIPs.length === 0 || clusterIPs.some((c) => !c.includes(':'));
  return [...(v4 ? ['0.0.0.0'] : []), ...(v6 ? ['::'] : [])];
}

/**
 * A port's nodePort (undefined: the port has no NodePort frontends). Kubernetes allocates it when
 * the Service is created; an import has no allocator, so a NodePort service's manifest must carry
 * it (as `kubectl get svc -o yaml` shows it); a LoadBalancer service's too unless
 * allocateLoadBalancerNodePorts is false. A ClusterIP service may not have one.
 */
function nodePort(v: unknown, type: K8sServiceType, allocate: unknown, at: string): number | undefined {
  if (v === undefined || v === null) {
    if (type === 'NodePort' || (type === 'LoadBalancer' && allocate !== false)) {
      throw invalidField(at, `is missing on a ${type} service`, 'give the node port (30000-32767 in a default cluster) as the cluster allocated it: `kubectl get svc NAME -o yaml` shows it; Cellium has no node-port allocator');
    }
    return undefined;
  }
  if (!validPort(v)) throw invalidField(at, `${JSON.stringify(v)} is not a port`, 'give a node port between 1 and 65535 (30000-32767 in a default cluster)');
  if (type !== 'NodePort' && type !== 'LoadBalancer') throw invalidField(at, `may not be used when type is ${type}`, 'make the service type NodePort or LoadBalancer, or leave nodePort out');
  return v;
}

/** Translates a `discovery.k8s.io/v1/EndpointSlice`; `at` names the document in errors. */
export function translateEndpointSlice(o: Obj, at = 'EndpointSlice'): K8sEndpointSlice {
  const { name, namespace } = meta(o, at);
  const labels = isObj(o.metadata) && isObj(o.metadata.labels) ? o.metadata.labels : {};
  const svcName = labels['kubernetes.io/service-name'];
  if (typeof svcName !== 'string' || !svcName) throw invalidField(`${at} /metadata/labels/kubernetes.io~1service-name`, 'is missing', 'label the slice with the name of its Service');
  const serviceKey = `${namespace}/${svcName}`;
  if (o.addressType === 'FQDN') return { serviceKey, name, backends: [] };
  if (o.addressType !== 'IPv4' && o.addressType !== 'IPv6') throw invalidField(`${at} /addressType`, `${JSON.stringify(o.addressType)} is not IPv4, IPv6 or FQDN`, 'give IPv4 or IPv6');
  const ports = o.ports ?? [];
  if (!Array.isArray(ports)) throw invalidField(`${at} /ports`, 'is not a list', 'give a list of {name, port, protocol}');
  const eps = o.endpoints ?? [];
  if (!Array.isArray(eps)) throw invalidField(`${at} /endpoints`, 'is not a list', 'give a list of {addresses, conditions}');
  const backends: Backend[] = [];
  for (const [i, ep] of eps.entries()) {
    const eat = `${at} /endpoints/${i}`;
    if (!isObj(ep)) throw invalidField(eat, 'is not an object', 'give {addresses, conditions}');
    const c = isObj(ep.conditions) ? ep.conditions : {};
    const ready = c.ready === undefined || c.ready === null || c.ready === true;
    const serving = c.serving === undefined || c.serving === null ? ready : c.serving === true;
    const state = ready ? 'active' : serving && c.terminating === true ? 'terminating' : undefined;
    if (!state) continue;
    const addrs = strings(ep.addresses, `${eat}/addresses`);
    for (const [k, a] of addrs.entries()) {
      const addr = ip(a, `${eat}/addresses/${k}`);
      if ((o.addressType === 'IPv6') !== addr.includes(':')) throw invalidField(`${eat}/addresses/${k}`, `${addr} is not an ${o.addressType as string} address`, 'give addresses of the slice addressType');
      for (const [j, p] of ports.entries()) {
        const pat = `${at} /ports/${j}`;
        if (!isObj(p)) throw invalidField(pat, 'is not an object', 'give {name, port, protocol}');
        if (!validPort(p.port)) throw invalidField(`${pat}/port`, `${JSON.stringify(p.port)} is not a port`, 'give a port between 1 and 65535');
        backends.push({
          address: { ip: addr, port: p.port, protocol: proto(p.protocol, `${pat}/protocol`), scope: 'external' },
          state,
          weight: 100,
          portName: (p.name as string | undefined) ?? '',
          ...(typeof ep.nodeName === 'string' ? { nodeName: ep.nodeName } : {}),
          ...(typeof ep.zone === 'string' ? { zone: ep.zone } : {}),
        });
      }
    }
  }
  return { serviceKey, name, backends };
}
