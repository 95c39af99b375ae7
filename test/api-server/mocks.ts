/**
 * Mocks of the managers the API handlers call (endpoint, identity, policy, datapath), small but
 * behaving like the real ones where the handlers depend on it (errors with codes, lookups by
 * Cilium's prefixed ids). Used until, and besides, the real cells in the integration tests.
 */
import { FakeIdentityAllocator } from '../../src/cells/identity/index.js';
import { Subject } from 'rxjs';
import { EndpointError } from '../../src/cells/endpoint/errors.js';
import type { EndpointChangeRequest, EndpointHealth, EndpointLogEntry, EndpointModel, EndpointState } from '../../src/cells/endpoint/model.js';
import type { EndpointAPIManager, EndpointManager, EndpointView } from '../../src/cells/endpoint/types.js';
import type { IdentityAllocator } from '../../src/cells/identity/types.js';
import type { Datapath, MapDump } from '../../src/datapath/types.js';
import { parseLabels, formatLabels } from '../../src/lib/labels.js';

/** A mock endpoint. */
export class MockEndpoint implements EndpointView {
  state: EndpointState = 'waiting-for-identity';
  labels: string[];
  userLabels: string[] = [];
  options: Record<string, string> = { Debug: 'Disabled' };
  identity?: number;
  readonly entries: EndpointLogEntry[] = [];
  constructor(
    public id: number,
    readonly req: EndpointChangeRequest,
  ) {
    this.labels = formatLabels(parseLabels(req.labels ?? []));
  }
  get containerId(): string | undefined { return this.req['container-id']; }
  get ipv4(): string | undefined { return this.req.addressing?.ipv4; }
  get ipv6(): string | undefined { return this.req.addressing?.ipv6; }
  get ifName(): string | undefined { return this.req['interface-name']; }
  get podName(): string | undefined { return this.req['k8s-pod-name']; }
  get namespace(): string | undefined { return this.req['k8s-namespace']; }
  setState(s: EndpointState, msg: string): void {
    this.state = s;
    this.entries.push({ timestamp: new Date().toISOString(), code: 'ok', message: msg, state: s });
  }
  toModel(): EndpointModel {
    return {
      id: this.id,
      spec: { 'label-configuration': { user: [...this.userLabels] }, options: { ...this.options } },
      status: {
        state: this.state,
        ...(this.identity ? { identity: { id: this.identity, labels: [...this.labels] } } : {}),
        labels: { realized: { user: [...this.userLabels] }, 'security-relevant': [...this.labels] },
        networking: { addressing: [{ ...(this.ipv4 ? { ipv4: this.ipv4 } : {}) }], ...(this.ifName ? { 'interface-name': this.ifName } : {}) },
        log: this.log(),
        health: this.health(),
        'external-identifiers': { ...(this.containerId ? { 'container-id': this.containerId } : {}) },
      },
    };
  }
  log(): readonly EndpointLogEntry[] { return this.entries; }
  health(): EndpointHealth { return { bpf: 'OK', policy: 'OK', connected: true, overallHealth: 'OK' }; }
  async regenerate(): Promise<void> { this.setState('ready', 'regenerated'); }
}

/** A mock endpoint manager and API manager over one table. */
export class MockEndpoints implements EndpointManager, EndpointAPIManager {
  readonly table = new Map<number, MockEndpoint>();
  readonly created$ = new Subject<EndpointView>();
  readonly deleted$ = new Subject<EndpointView>();
  readonly restored$ = new Subject<EndpointView>();
  regenerateAllCalls = 0;
  private next = 100;

  async addEndpoint(): Promise<void> { throw new Error('not used by the API'); }
  async removeEndpoint(): Promise<void> { throw new Error('not used by the API'); }
  lookup(raw: string): MockEndpoint | undefined {
    const m = /^(?:(cilium-local|container-id|pod-name|ipv4|ipv6|cni-attachment-id):)?(.+)$/.exec(raw)!;
    const [, prefix, v] = m;
    const all = [...this.table.values()];
    switch (prefix) {
      case undefined:
      case 'cilium-local':
        if (!/^\d+$/.test(v!)) throw new EndpointError('invalid', `invalid endpoint ID "${v}"`);
        return this.table.get(Number(v));
      case 'container-id': return all.find((e) => e.containerId === v);
      case 'pod-name': return all.find((e) => `${e.namespace}/${e.podName}` === v!.replace(':', '/'));
      case 'ipv4': return all.find((e) => e.ipv4 === v);
      case 'ipv6': return all.find((e) => e.ipv6 === v);
      default: return all.find((e) => `${e.containerId}:${e.req['container-interface-name'] ?? 'eth0'}` === v);
    }
  }
  getEndpoints(): EndpointView[] { return [...this.table.values()].sort((a, b) => a.id - b.id); }
  async regenerateAll(): Promise<void> { this.regenerateAllCalls++; }

  async createEndpoint(_ctx: unknown, req: EndpointChangeRequest): Promise<EndpointView> {
    if (!req.addressing?.ipv4 && !req.addressing?.ipv6) throw new EndpointError('invalid', 'an endpoint needs an IPv4 or an IPv6 address', '/addressing');
    const dup = [...this.table.values()].find((e) => (req.addressing?.ipv4 && e.ipv4 === req.addressing.ipv4) || (req.id && e.id === req.id));
    if (dup) throw new EndpointError('exists', `endpoint ${dup.id} already has ${req.addressing?.ipv4 ?? req.id}`);
    if (req['container-id'] === 'fail') throw new EndpointError('failed', 'datapath exploded');
    if (req['container-id'] === 'busy') throw new EndpointError('rate-limited', 'too many regenerations');
    const ep = new MockEndpoint(req.id || this.next++, req);
    ep.identity = 256 + ep.id;
    this.table.set(ep.id, ep);
    if (req['sync-build-endpoint']) ep.setState('ready', 'built');
    else ep.setState('waiting-to-regenerate', 'queued');
    return ep;
  }
  async patchEndpoint(_ctx: unknown, id: string, req: EndpointChangeRequest): Promise<EndpointView> {
    const ep = this.must(id);
    if (req.addressing?.ipv4 && req.addressing.ipv4 !== ep.ipv4) throw new EndpointError('invalid', 'addressing cannot be changed', '/addressing/ipv4');
    if (req.state) ep.setState(req.state, 'patched');
    return ep;
  }
  async deleteEndpoint(_ctx: unknown, id: string): Promise<void> {
    this.table.delete(this.must(id).id);
  }
  async deleteEndpointsByContainerID(_ctx: unknown, containerId: string): Promise<number> {
    const victims = [...this.table.values()].filter((e) => e.containerId === containerId);
    for (const v of victims) this.table.delete(v.id);
    return victims.length;
  }
  async patchLabels(_ctx: unknown, id: string, add: readonly string[], del: readonly string[]): Promise<EndpointView> {
    const ep = this.must(id);
    ep.userLabels = [...ep.userLabels.filter((l) => !del.includes(l)), ...add].sort();
    return ep;
  }
  async patchConfig(_ctx: unknown, id: string, options: Readonly<Record<string, string>>): Promise<EndpointView> {
    const ep = this.must(id);
    for (const k of Object.keys(options)) if (k !== 'Debug') throw new EndpointError('invalid', `unknown endpoint option "${k}"`, `/options/${k}`);
    Object.assign(ep.options, options);
    return ep;
  }
  private must(id: string): MockEndpoint {
    const ep = this.lookup(id);
    if (!ep) throw new EndpointError('not-found', `endpoint ${id} not found`);
    return ep;
  }
}

/** The identity cell's fake with two global identities of known numbers (357 app=a, 358 app=b). */
export function mockIdentities(): IdentityAllocator {
  const f = new FakeIdentityAllocator();
  f.seed(357, ['k8s:app=a', 'k8s:io.kubernetes.pod.namespace=default']);
  f.seed(358, ['k8s:app=b', 'k8s:io.kubernetes.pod.namespace=default']);
  return f;
}

/** The policy cell's fake (test/fakes/policy.ts). */
export { FakePolicyRepository as MockPolicy } from '../fakes/policy.js';

/** A mock datapath with two maps, in `mode` (memory by default). */
export function mockDatapath(mode: Datapath['mode'] = 'memory'): Datapath {
  const status = { state: 'done' as const, updatedAt: new Date().toISOString() };
  const maps: MapDump[] = [
    { name: 'cellium_lxc', status, entries: [{ key: '10.200.0.5', value: 'id=101' }] },
    { name: 'cellium_ipcache', status: { state: 'error', message: 'ENOSPC', updatedAt: status.updatedAt }, entries: [{ key: '0.0.0.0/0', value: 'identity=2' }] },
  ];
  return {
    mode,
    loader: { reloadEndpoint: async () => undefined, unloadEndpoint: async () => undefined, isLoaded: async () => true, checkAttached: async () => undefined },
    maps: {
      setEndpoint: () => undefined, deleteEndpoint: () => undefined, upsertIPCache: () => undefined, deleteIPCache: () => undefined,
      setPolicy: () => undefined, deletePolicy: () => undefined, flush: async () => [],
      list: async () => maps,
      summary: async () => maps.map((m) => ({ name: m.name, size: m.entries.length })),
      get: async (name) => maps.find((m) => m.name === name),
    },
    verdict: async () => ({ allowed: true, peerIdentity: 2 }),
    dropCounters: async () => ({}),
  };
}
