/** Builders of services, frontends and backends for the loadbalancer tests. */
import type { Backend, BackendState, FrontendParams, Service, ServiceUpsert } from '../../src/cells/loadbalancer/index.js';

/** A Kubernetes-style service named `ns/name`. */
export function svc(key: string, extra: Partial<Service> = {}): Service {
  const [namespace, name] = key.includes('/') ? key.split('/') as [string, string] : ['', key];
  return {
    key, name, namespace, source: 'k8s', sessionAffinity: false, sessionAffinityTimeoutSec: 0,
    extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [], ...extra,
  };
}

/** A TCP ClusterIP frontend. */
export function fe(ip: string, port: number, portName?: string): FrontendParams {
  return { address: { ip, port, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP', ...(portName ? { portName } : {}) };
}

/** A TCP backend. */
export function be(ip: string, port: number, state: BackendState = 'active', portName?: string): Backend {
  return { address: { ip, port, protocol: 'tcp', scope: 'external' }, state, weight: 1, ...(portName ? { portName } : {}) };
}

/** An upsert of a service with one frontend and some backends. */
export function upsert(key: string, vip: string, port: number, backends: readonly Backend[]): ServiceUpsert {
  return { service: svc(key), frontends: [fe(vip, port)], backends };
}
