/** Mocks of the endpoint cell's dependencies: identity allocator, policy repository, IPAM, datapath, links. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject } from 'rxjs';
import type { Replacement, TestLike } from '../../src/hive/index.js';
import { DatapathToken, LinkCheckerToken, type Datapath, type LiveEndpoint, type LostProgram } from '../../src/datapath/types.js';
import { MemoryLoader } from '../../src/cells/datapath-memory/loader.js';
import { MemoryMaps } from '../../src/cells/datapath-memory/maps.js';
import { IdentityAllocatorToken } from '../../src/cells/identity/types.js';
import { IPAMToken, type EndpointAddress, type IPAM, type IPAllocation } from '../../src/cells/ipam/types.js';
import { IPAMError } from '../../src/cells/ipam/errors.js';
import { NamedPortMapToken, PolicyRepositoryToken, PolicyRestoreToken, type PolicyRestore } from '../../src/cells/policy/types.js';
import { NamedPortMultiMap } from '../../src/cells/policy/index.js';

/** The identity cell's fake (reserved identities as the real cell has them, ids from 256, reference counts). */
export { FakeIdentityAllocator as MockIdentities } from '../../src/cells/identity/index.js';
import { FakeIdentityAllocator as MockIdentities } from '../../src/cells/identity/index.js';

/** The policy cell's fake (test/fakes/policy.ts). */
export { FakePolicyRepository as MockPolicy } from '../fakes/policy.js';
import { FakePolicyRepository as MockPolicy } from '../fakes/policy.js';

/** IPAM recording owners, the endpoints using addresses and releases; `refuse` makes useForEndpoint fail. */
export class MockIPAM implements IPAM {
  readonly owners = new Map<string, string>();
  /** IP -> the endpoint using it (adopted: the address was allocated before the endpoint took it). */
  readonly users = new Map<string, { id: number; adopted: boolean }>();
  readonly released: string[] = [];
  /** IPs useForEndpoint refuses (as the gateway address). */
  readonly refuse = new Set<string>();

  private alloc(ip: string, owner: string): IPAllocation {
    this.owners.set(ip, owner);
    return { ip, owner, family: ip.includes(':') ? 'ipv6' : 'ipv4', cidr: '10.200.0.0/16', gateway: '10.200.0.1' };
  }
  allocateNext(): IPAllocation { throw new Error('not used by the endpoint cell'); }
  allocateIP(ip: string, owner: string): IPAllocation { return this.alloc(ip, owner); }
  release(ip: string): boolean { this.released.push(ip); return this.owners.delete(ip); }
  releaseOwner(): string[] { return []; }
  useForEndpoint(ip: string, endpointId: number, owner: string): EndpointAddress {
    if (this.refuse.has(ip)) throw new IPAMError('reserved', `${ip} is the gateway address of the pool and is never allocated: pick another address`, ip);
    const user = this.users.get(ip);
    if (user && user.id !== endpointId) throw new IPAMError('in-use', `${ip} is in use by endpoint ${user.id}`, ip);
    const adopted = user ? user.adopted : this.owners.has(ip);
    if (!adopted) this.alloc(ip, owner);
    this.users.set(ip, { id: endpointId, adopted });
    return { ip, family: ip.includes(':') ? 'ipv6' : 'ipv4', owner: this.owners.get(ip)!, reserved: !adopted, outOfPool: false };
  }
  releaseForEndpoint(ip: string, endpointId: number, opts: { keepAdopted?: boolean } = {}): boolean {
    const user = this.users.get(ip);
    if (user?.id !== endpointId) return false;
    this.users.delete(ip);
    if (user.adopted && opts.keepAdopted) return false;
    this.released.push(ip);
    return this.owners.delete(ip);
  }
  ownerOf(ip: string): string | undefined { return this.owners.get(ip); }
  status(): [] { return []; }
  allocations(): [] { return []; }
}

/** A datapath over the real in-memory maps and loader, with failure injection; records the restore calls. */
export class MockDatapath implements Datapath {
  readonly mode = 'memory' as const;
  readonly loader = new MemoryLoader();
  readonly maps = new MemoryMaps();
  /** Set to make reloadEndpoint fail. */
  failLoad?: Error;
  /** Gate reloadEndpoint on this promise when set. */
  gate?: Promise<void>;
  /** Emit here what a BPF prune reports as gone from its interface. */
  readonly lost = new Subject<LostProgram>();
  readonly programsLost$ = this.lost.asObservable();
  /** The restore calls, in order, with the live endpoints they were given. */
  readonly restoreCalls: Array<{ step: 'removeStale' | 'restoreDone'; live: readonly LiveEndpoint[] }> = [];
  /** What removeStale answers (the IDs it "removed"). */
  staleIds: number[] = [];

  async removeStale(live: readonly LiveEndpoint[]): Promise<number[]> {
    this.restoreCalls.push({ step: 'removeStale', live });
    return this.staleIds;
  }
  async restoreDone(live: readonly LiveEndpoint[]): Promise<number[]> {
    this.restoreCalls.push({ step: 'restoreDone', live });
    return [];
  }

  constructor() {
    const reload = this.loader.reloadEndpoint.bind(this.loader);
    this.loader.reloadEndpoint = async (cfg, signal) => {
      if (this.gate) await this.gate;
      if (this.failLoad) throw this.failLoad;
      return reload(cfg, signal);
    };
  }
  async verdict(): Promise<never> { throw new Error('not used by the endpoint cell tests'); }
  async dropCounters(): Promise<Record<string, number>> { return {}; }
}

/** Links: present unless named in `gone`. */
export class MockLinks {
  readonly gone = new Set<string>();
  readonly check = async (ifName: string): Promise<boolean> => !this.gone.has(ifName);
}

/** Every mock, with the replacements for testHive. */
export interface Mocks {
  identities: MockIdentities;
  policy: MockPolicy;
  /** The policy restore the endpoint restore waits for (settled unless a test replaces it). */
  policyRestore: PolicyRestore;
  /** The node's named-port map (the policy cell's own, a plain data structure). */
  namedPorts: NamedPortMultiMap;
  ipam: MockIPAM;
  datapath: MockDatapath;
  links: MockLinks;
  replace: Replacement[];
}

/** Fresh mocks. */
export function mocks(): Mocks {
  const m = { identities: new MockIdentities(), policy: new MockPolicy(), policyRestore: { done: Promise.resolve() } as PolicyRestore, namedPorts: new NamedPortMultiMap(), ipam: new MockIPAM(), datapath: new MockDatapath(), links: new MockLinks() };
  return {
    ...m,
    replace: [
      [IdentityAllocatorToken, m.identities],
      [PolicyRepositoryToken, m.policy],
      [PolicyRestoreToken, m.policyRestore],
      [NamedPortMapToken, m.namedPorts],
      [IPAMToken, m.ipam],
      [DatapathToken, m.datapath],
      [LinkCheckerToken, m.links.check],
    ],
  };
}

/** A temporary state directory removed at the end of the test. */
export function tempStateDir(t: TestLike, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `cellium-ep-${name}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A change request for endpoint number `n` (unique IPs, interface and container). */
export function request(n: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'container-id': `container-${n}`,
    'container-interface-name': 'eth0',
    'interface-name': `lxc${n}`,
    'interface-index': 1000 + n,
    mac: '02:00:00:00:00:01',
    'host-mac': '02:00:00:00:00:02',
    addressing: { ipv4: `10.200.${n >> 8}.${n & 255}`, ipv6: `fd00::${n.toString(16)}` },
    'k8s-pod-name': `pod-${n}`,
    'k8s-namespace': 'default',
    labels: ['k8s:app=web'],
    state: 'waiting-for-identity',
    'sync-build-endpoint': true,
    ...extra,
  };
}
