/**
 * FakeIdentityAllocator: the identity cell's fake for tests of other cells (and embedders' tests):
 * the real reserved identities (host 1, world 2, init 5, ...; `reservedFor` decides, as the real
 * allocator does), global identities from 256 in allocation order, local CIDR identities from
 * 1<<24, reference counts, change events, and failure injection. No state directory.
 */
import { Subject } from 'rxjs';
import { labelsKey, parseLabels, sortLabels, type Label } from '../../lib/labels.js';
import { cidrLabel } from './cidr.js';
import { makeIdentity, reservedFor, reservedIdentities } from './reserved.js';
import type { AllocateOptions, Identity, IdentityAllocator, IdentityChange } from './types.js';

/** The fake allocator. */
export class FakeIdentityAllocator implements IdentityAllocator {
  readonly range = { minGlobal: 256, maxGlobal: 65535, localScope: 1 << 24 };
  private readonly subject = new Subject<IdentityChange>();
  readonly changes$ = this.subject.asObservable();
  private readonly byKey = new Map<string, Identity>();
  private readonly byId = new Map<number, Identity>(reservedIdentities);
  private readonly counts = new Map<number, number>();
  private next = 256;
  private nextLocal = (1 << 24) + 1;
  /** Every id passed to release, in order. */
  readonly released: number[] = [];
  /** Set to make allocate and allocateCIDR fail with it. */
  fail?: Error;

  /** See IdentityAllocator: takes a reference (reserved identities are not counted). */
  async allocate(labels: readonly Label[], _opts?: AllocateOptions): Promise<{ identity: Identity; isNew: boolean }> {
    if (this.fail) throw this.fail;
    return this.allocateSync(labels);
  }

  /** allocate without the promise, for test setup. */
  allocateSync(labels: readonly Label[]): { identity: Identity; isNew: boolean } {
    const r = reservedFor(sortLabels(labels));
    if (r) return { identity: r, isNew: false };
    const key = labelsKey(labels);
    const have = this.byKey.get(key);
    const identity = have ?? this.add(key, makeIdentity(this.next++, sortLabels(labels), false));
    this.counts.set(identity.id, (this.counts.get(identity.id) ?? 0) + 1);
    return { identity, isNew: !have };
  }

  /** Allocates from label strings (`k8s:app=web`). */
  id(...labels: string[]): Identity {
    return this.allocateSync(parseLabels(labels)).identity;
  }

  /** Puts an identity under a number of the test's choosing (fixtures with known numbers). */
  seed(id: number, labels: readonly string[]): Identity {
    const ls = sortLabels(parseLabels(labels));
    const identity = this.add(labelsKey(ls), makeIdentity(id, ls, false));
    this.next = Math.max(this.next, id + 1);
    return identity;
  }

  /** See IdentityAllocator. */
  async allocateCIDR(cidr: string, _opts?: AllocateOptions): Promise<Identity> {
    if (this.fail) throw this.fail;
    const ls = sortLabels([cidrLabel(cidr), { source: 'reserved', key: 'world', value: '' }]);
    const key = labelsKey(ls);
    const identity = this.byKey.get(key) ?? this.add(key, makeIdentity(this.nextLocal++, ls, false));
    this.counts.set(identity.id, (this.counts.get(identity.id) ?? 0) + 1);
    return identity;
  }

  /** See IdentityAllocator: drops a reference; the last one deletes the identity (with an event). */
  async release(id: number): Promise<boolean> {
    this.released.push(id);
    const i = this.byId.get(id);
    if (!i || i.reserved) return false;
    const n = (this.counts.get(id) ?? 0) - 1;
    if (n > 0) {
      this.counts.set(id, n);
      return false;
    }
    this.counts.delete(id);
    this.byId.delete(id);
    this.byKey.delete(labelsKey(i.labelSet));
    this.subject.next({ kind: 'delete', identity: i });
    return true;
  }

  /** References held on `id` (0 when it is not allocated). */
  refs(id: number): number {
    return this.counts.get(id) ?? 0;
  }

  /** See IdentityAllocator. */
  lookup(id: number): Identity | undefined {
    return this.byId.get(id);
  }

  /** See IdentityAllocator. */
  lookupByLabels(labels: readonly Label[]): Identity | undefined {
    return reservedFor(sortLabels(labels)) ?? this.byKey.get(labelsKey(labels));
  }

  /** See IdentityAllocator. */
  list(): Identity[] {
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  /** See IdentityAllocator: nothing to collect (released identities go at once). */
  async gc(): Promise<number> {
    return 0;
  }

  private add(key: string, i: Identity): Identity {
    this.byKey.set(key, i);
    this.byId.set(i.id, i);
    this.subject.next({ kind: 'add', identity: i });
    return i;
  }
}
