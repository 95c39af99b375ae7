/**
 * An in-memory apiserver for the k8s-identity unit tests: CiliumIdentities and Leases with the
 * apiserver's rules the cell relies on (create-only names: a second create is 409; resourceVersion
 * bumped on every write; JSON-patch `test` ops failing as 422; delete preconditions on uid and
 * resourceVersion as 409), and a watch per subscriber that can be held back (a stale cache) or
 * released. `down` makes every call fail as an unreachable apiserver does.
 */
import type { ResourceEvent } from '../../src/cells/k8s/index.js';
import { HEARTBEAT_ANNOTATION, IdentityRequestError, type CiliumIdentity, type Lease } from '../../src/cells/k8s-identity/index.js';

type Listener = (ev: ResourceEvent<CiliumIdentity>) => void;

/** The fake; see the module comment. */
export class FakeApiserver {
  readonly identities = new Map<string, CiliumIdentity>();
  readonly leases = new Map<string, Lease>();
  private rv = 1;
  private uid = 1;
  private readonly watchers = new Set<{ fn: Listener; held: ResourceEvent<CiliumIdentity>[]; paused: boolean }>();
  /** Every call: 'create 300', 'get 300', 'patch 300', 'delete 300', 'lease get' ... */
  readonly calls: string[] = [];
  down = false;
  /** Runs before a create answers (to interleave another agent's write). */
  beforeCreate?: (name: string) => void;

  private check(what: string): void {
    this.calls.push(what);
    if (this.down) throw new IdentityRequestError(0, `kubernetes: ${what}: no answer (connect ECONNREFUSED); check that the apiserver is reachable`);
  }

  /** A watch feeding `fn`; `pause()` holds events back until `resume()`. */
  watch(fn: Listener): { pause(): void; resume(): void } {
    const w = { fn, held: [] as ResourceEvent<CiliumIdentity>[], paused: false };
    this.watchers.add(w);
    for (const [key, object] of this.identities) fn({ kind: 'upsert', key, object });
    return {
      pause: () => void (w.paused = true),
      resume: () => {
        w.paused = false;
        for (const ev of w.held.splice(0)) fn(ev);
      },
    };
  }

  private emit(ev: ResourceEvent<CiliumIdentity>): void {
    for (const w of this.watchers) {
      if (w.paused) w.held.push(ev);
      else w.fn(ev);
    }
  }

  private store(obj: CiliumIdentity): CiliumIdentity {
    const stored = structuredClone({ ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } }) as CiliumIdentity;
    this.identities.set(obj.metadata.name, stored);
    this.emit({ kind: 'upsert', key: obj.metadata.name, object: stored });
    return structuredClone(stored);
  }

  async get(name: string): Promise<CiliumIdentity | undefined> {
    this.check(`get ${name}`);
    await Promise.resolve();
    const o = this.identities.get(name);
    return o && structuredClone(o);
  }

  async create(obj: CiliumIdentity): Promise<CiliumIdentity | 'exists'> {
    this.check(`create ${obj.metadata.name}`);
    await Promise.resolve();
    this.beforeCreate?.(obj.metadata.name);
    if (this.identities.has(obj.metadata.name)) return 'exists';
    return this.store({ ...obj, metadata: { ...obj.metadata, uid: `uid-${this.uid++}` } });
  }

  async mark(name: string, resourceVersion: string, _has: boolean, stamp: string): Promise<boolean> {
    this.check(`patch ${name}`);
    await Promise.resolve();
    const o = this.identities.get(name);
    if (!o || o.metadata.resourceVersion !== resourceVersion) return false;
    this.store({ ...o, metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, [HEARTBEAT_ANNOTATION]: stamp } } });
    return true;
  }

  async unmark(name: string, stamp: string): Promise<boolean> {
    this.check(`patch ${name}`);
    await Promise.resolve();
    const o = this.identities.get(name);
    if (!o || o.metadata.annotations?.[HEARTBEAT_ANNOTATION] !== stamp) return false;
    const annotations = { ...o.metadata.annotations };
    delete annotations[HEARTBEAT_ANNOTATION];
    this.store({ ...o, metadata: { ...o.metadata, annotations } });
    return true;
  }

  async delete(name: string, uid: string, resourceVersion: string): Promise<boolean> {
    this.check(`delete ${name}`);
    await Promise.resolve();
    const o = this.identities.get(name);
    if (!o || o.metadata.uid !== uid || o.metadata.resourceVersion !== resourceVersion) return false;
    this.identities.delete(name);
    this.emit({ kind: 'delete', key: name, object: o });
    return true;
  }

  /** Deletes without preconditions (kubectl delete). */
  remove(name: string): void {
    const o = this.identities.get(name);
    if (!o) return;
    this.identities.delete(name);
    this.emit({ kind: 'delete', key: name, object: o });
  }

  async getLease(ns: string, name: string): Promise<Lease | undefined> {
    this.check('lease get');
    await Promise.resolve();
    const l = this.leases.get(`${ns}/${name}`);
    return l && structuredClone(l);
  }

  async createLease(lease: Lease): Promise<Lease | undefined> {
    this.check('lease create');
    await Promise.resolve();
    const key = `${lease.metadata.namespace}/${lease.metadata.name}`;
    if (this.leases.has(key)) return undefined;
    const l = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.rv) } };
    this.leases.set(key, l);
    return structuredClone(l);
  }

  async updateLease(lease: Lease): Promise<Lease | undefined> {
    this.check('lease update');
    await Promise.resolve();
    const key = `${lease.metadata.namespace}/${lease.metadata.name}`;
    const cur = this.leases.get(key);
    if (!cur || cur.metadata.resourceVersion !== lease.metadata.resourceVersion) return undefined;
    const l = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.rv) } };
    this.leases.set(key, l);
    return structuredClone(l);
  }
}
