/**
 * Cilium's API models of services: a ServiceSpec (PUT /service/{id}) to a ServiceUpsert, and a
 * frontend with its status to the Service model (GET /service). Field errors are LBErrors whose
 * pointers are into the ServiceSpec (`/frontend-address/ip`, `/backend-addresses/2/port`).
 */
import type { BackendAddress, Service as ServiceModel, ServiceSpec } from '../../api/models.js';
import { canonicalIP, parseProto, validPort } from './addr.js';
import { invalidBackend, invalidField, invalidFrontend } from './errors.js';
import { apiServiceKey } from './manager.js';
import type { Backend, BackendState, FrontendStatus, Service, ServiceUpsert } from './types.js';

/** Cilium's default backend weight. */
export const DEFAULT_BACKEND_WEIGHT = 100;

/** The upsert a ServiceSpec asks for, for service `id`. */
export function specToUpsert(id: number, spec: ServiceSpec): ServiceUpsert {
  if (spec.id !== undefined && spec.id !== id) throw invalidField('/id', `${spec.id} is not the service ID of the path (${id})`, `give the path's ID in the body too, or leave the body's id out`);
  const fa = spec['frontend-address'];
  const ip = canonicalIP(fa.ip ?? '');
  if (!ip) throw invalidFrontend('/frontend-address/ip', `${JSON.stringify(fa.ip)} is not an IP address`, 'give the frontend an IPv4 or IPv6 address such as 10.96.0.10');
  if (!validPort(fa.port)) throw invalidFrontend('/frontend-address/port', `${JSON.stringify(fa.port)} is not a port`, 'give the frontend a port between 1 and 65535');
  const protocol = parseProto(fa.protocol ?? 'tcp')!;
  const flags = spec.flags ?? {};
  if (flags.natPolicy && flags.natPolicy !== 'None') throw invalidFrontend('/flags/natPolicy', `${flags.natPolicy} is not supported`, 'leave natPolicy out or give None');
  if (spec.updateServices) throw invalidField('/updateServices', 'updating every service selecting the backends is not supported', 'leave updateServices out and update each service by ID');
  const backends: Backend[] = (spec['backend-addresses'] ?? []).map((b, i) => backendOf(b, i, fa.port!, protocol));
  const ext = flags.extTrafficPolicy ?? flags.trafficPolicy ?? 'Cluster';
  const service: Service = {
    key: apiServiceKey(id),
    name: flags.name ?? '',
    namespace: flags.namespace ?? '',
    source: 'api',
    sessionAffinity: false,
    sessionAffinityTimeoutSec: 0,
    extTrafficPolicy: ext,
    intTrafficPolicy: flags.intTrafficPolicy ?? 'Cluster',
    sourceRanges: [],
  };
  return { service, frontends: [{ address: { ip, port: fa.port!, protocol, scope: fa.scope ?? 'external' }, type: flags.type ?? 'ClusterIP' }], backends };
}

function backendOf(b: BackendAddress, i: number, fport: number, fproto: ReturnType<typeof parseProto>): Backend {
  const at = `/backend-addresses/${i}`;
  const ip = canonicalIP(b.ip);
  if (!ip) throw invalidBackend(`${at}/ip`, `${JSON.stringify(b.ip)} is not an IP address`, 'give the backend an IPv4 or IPv6 address');
  const port = b.port === undefined || b.port === 0 ? fport : b.port;
  if (!validPort(port)) throw invalidBackend(`${at}/port`, `${JSON.stringify(b.port)} is not a port`, 'give a port between 1 and 65535');
  const given = b.protocol === undefined ? fproto : parseProto(b.protocol);
  // ANY on a backend: the frontend's
  const protocol = given === 'any' ? fproto : given;
  if (!protocol) throw invalidBackend(`${at}/protocol`, `${JSON.stringify(b.protocol)} is not a protocol`, 'give TCP or UDP');
  // the datapath translates the frontend's packets to the backend whatever its protocol: a backend
  // of another protocol would get them unasked
  if (fproto && fproto !== 'any' && protocol !== fproto) throw invalidBackend(`${at}/protocol`, `${protocol.toUpperCase()} is not the frontend's protocol (${fproto.toUpperCase()})`, "give the frontend's protocol or leave the backend's out");
  return {
    address: { ip, port, protocol: protocol ?? 'tcp', scope: 'external' },
    state: (b.state ?? 'active') as BackendState,
    weight: b.weight ?? DEFAULT_BACKEND_WEIGHT,
    ...(b.nodeName ? { nodeName: b.nodeName } : {}),
    ...(b.zone ? { zone: b.zone } : {}),
  };
}

/** The Service model of a frontend: its spec, what is realized (when done) and its reconciliation state. */
export function frontendToModel(s: FrontendStatus, svc?: Service): ServiceModel {
  const f = s.frontend;
  const spec: ServiceSpec = {
    id: f.id,
    'frontend-address': { ip: f.address.ip, port: f.address.port, protocol: f.address.protocol, scope: f.address.scope },
    'backend-addresses': f.backends.map((b) => ({
      ip: b.address.ip,
      port: b.address.port,
      protocol: b.address.protocol.toUpperCase(),
      state: b.state,
      weight: b.weight,
      ...(b.nodeName ? { nodeName: b.nodeName } : {}),
      ...(b.zone ? { zone: b.zone } : {}),
    })),
    flags: {
      type: f.type,
      trafficPolicy: f.extTrafficPolicy,
      extTrafficPolicy: f.extTrafficPolicy,
      intTrafficPolicy: f.intTrafficPolicy,
      ...(svc?.name ? { name: svc.name } : {}),
      ...(svc?.namespace ? { namespace: svc.namespace } : {}),
    },
  };
  return {
    spec,
    status: { ...(s.state === 'done' ? { realized: spec } : {}), 'cellium-state': { state: s.state, ...(s.message ? { message: s.message } : {}) } },
  };
}
