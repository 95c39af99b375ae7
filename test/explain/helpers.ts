// Helpers of the explain unit tests: the real policy cell over the identity cell's fake allocator,
// fakes of the endpoint manager and the service manager (what the explainer reads), and Hubble
// flows shaped as `hubble observe -o json` prints them.
import type { EndpointManager, EndpointView } from '../../src/cells/endpoint/index.js';
import { Explainer } from '../../src/cells/explain/index.js';
import type { FrontendStatus, Service, ServiceManager } from '../../src/cells/loadbalancer/index.js';
import type { TestLike } from '../../src/hive/index.js';
import { policyHive } from '../policy/helpers.js';

/** A local endpoint as the fake manager holds it. */
export interface FakeEndpoint {
  readonly id: number;
  readonly ipv4: string;
  readonly podName: string;
  readonly namespace: string;
  readonly identity: number;
  readonly labels: readonly string[];
  readonly namedPorts?: readonly { name: string; port: number; protocol: string }[];
  readonly ifIndex?: number;
}

function view(e: FakeEndpoint): EndpointView {
  return {
    id: e.id, state: 'ready', ipv4: e.ipv4, podName: e.podName, namespace: e.namespace, identity: e.identity, labels: e.labels,
    toModel: () => ({ id: e.id, status: { namedPorts: e.namedPorts ?? [], networking: { 'interface-index': e.ifIndex } } }),
  } as unknown as EndpointView;
}

/** An EndpointManager holding `eps` (lookup by number, `ipv4:ADDR`). */
export function fakeEndpoints(eps: FakeEndpoint[]): EndpointManager {
  return {
    lookup: (id: string) => {
      const e = eps.find((x) => String(x.id) === id || `ipv4:${x.ipv4}` === id);
      return e && view(e);
    },
    getEndpoints: () => eps.map(view),
  } as unknown as EndpointManager;
}

/** A ServiceManager with these frontends. */
export function fakeServices(list: FrontendStatus[], services: Service[]): ServiceManager {
  return { list: () => list, service: (key: string) => services.find((s) => s.key === key) } as unknown as ServiceManager;
}

/** The policy cell, identities app=client (in `ns`), app=web (in `ns`) and an explainer over them. */
export async function world(t: TestLike, opts: { webPorts?: FakeEndpoint['namedPorts']; services?: ServiceManager } = {}) {
  const { repo, alloc, h } = await policyHive(t);
  const ns = 'k8s:io.kubernetes.pod.namespace=shop';
  const client = alloc.id('k8s:app=client', ns);
  const web = alloc.id('k8s:app=web', ns);
  const other = alloc.id('k8s:app=other', ns);
  const eps: FakeEndpoint[] = [
    { id: 11, ipv4: '10.0.0.11', podName: 'shop/client-0', namespace: 'shop', identity: client.id, labels: client.labels, ifIndex: 111 },
    { id: 12, ipv4: '10.0.0.12', podName: 'shop/web-0', namespace: 'shop', identity: web.id, labels: web.labels, namedPorts: opts.webPorts ?? [] },
    { id: 13, ipv4: '10.0.0.13', podName: 'shop/other-0', namespace: 'shop', identity: other.id, labels: other.labels, ifIndex: 113 },
  ];
  const explainer = new Explainer({ repo, identities: alloc, endpoints: fakeEndpoints(eps), services: opts.services ?? fakeServices([], []) });
  return { repo, alloc, h, client, web, other, explainer };
}

type Json = Record<string, unknown>;

/** A side of a Hubble flow. */
export function side(id: number, identity: number, labels: readonly string[], pod: string): Json {
  return { ID: id, identity, namespace: 'shop', labels: [...labels], pod_name: pod };
}

/** A dropped TCP flow from client-0 to web-0 as `hubble observe -o json` prints it (a GetFlowsResponse). */
export function dropLine(w: Awaited<ReturnType<typeof world>>, o: { port?: number; reason?: string; direction?: string; proto?: 'TCP' | 'UDP' | 'ICMPv4'; to?: 'web' | 'other' } = {}): Json {
  const proto = o.proto ?? 'TCP';
  const dst = o.to === 'other' ? w.other : w.web;
  const l4 = proto === 'ICMPv4' ? { ICMPv4: { type: 8 } } : { [proto]: { source_port: 40000, destination_port: o.port ?? 81 } };
  return {
    flow: {
      time: '2026-11-27T12:00:00.123456789Z', uuid: 'f-1', verdict: 'DROPPED', drop_reason: 133, drop_reason_desc: o.reason ?? 'POLICY_DENIED',
      IP: { source: '10.0.0.11', destination: o.to === 'other' ? '10.0.0.13' : '10.0.0.12', ipVersion: 'IPv4' }, l4,
      source: side(11, w.client.id, w.client.labels, 'client-0'),
      destination: side(o.to === 'other' ? 13 : 12, dst.id, dst.labels, o.to === 'other' ? 'other-0' : 'web-0'),
      Type: 'L3_L4', event_type: { type: 1, sub_type: 133 }, traffic_direction: o.direction ?? 'INGRESS',
    },
    node_name: 'node-a',
  };
}

/** A CiliumNetworkPolicy in namespace shop. */
export function cnp(name: string, spec: Json): string {
  return JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace: 'shop' }, spec });
}
