/**
 * The SelectorCache: every selector the rules use, with the identities it selects, kept up to date
 * incrementally from IdentityAllocator.changes$, which its owner feeds to `onIdentity` (the policy
 * cell's observer job `selector-cache-identities`, inside the allocator's `next`): a new identity
 * is matched against the cached selectors only; a new selector against the known identities only.
 * It also keeps the reverse index identity -> selectors, so finding the rules of an endpoint costs
 * what matches, not what exists.
 */
import { addTo, removeFrom } from '../../lib/multi-index.js';
import type { Identity, IdentityAllocator, IdentityChange } from '../identity/types.js';
import type { Selector } from './selector.js';
import type { CachedSelector } from './types.js';

interface Entry {
  readonly selector: Selector;
  readonly ids: Set<number>;
  users: number;
}

/** Called after an identity change with the keys of the selectors whose selection changed. */
export type SelectionListener = (changedKeys: readonly string[], change: IdentityChange) => void;

/** Every current address of an identity's endpoints; undefined when unknown (a `byAddress` selector then selects it by labels only). */
export type AddressSource = (identity: number) => readonly string[] | undefined;

/** See the module comment. */
export class SelectorCache {
  private readonly entries = new Map<string, Entry>();
  private readonly selectedBy = new Map<number, Set<string>>();
  private readonly identities = new Map<number, Identity>();
  private listener?: SelectionListener;

  /**
   * Starts from the allocator's identities now; its changes from here on come through `onIdentity`.
   * `addresses` gives the endpoints' addresses that `byAddress` selectors (ipBlock) look at; their
   * changes come through `onAddresses`.
   */
  constructor(allocator: IdentityAllocator, private readonly addresses: AddressSource = () => undefined) {
    for (const id of allocator.list()) this.identities.set(id.id, id);
  }

  private matches(selector: Selector, id: Identity): boolean {
    return selector.byAddress ? selector.matches(id, this.addresses(id.id)) : selector.matches(id);
  }

  /** Sets the function told about selection changes (the repository). */
  onSelectionChange(listener: SelectionListener): void {
    this.listener = listener;
  }

  /** Adds a user of a selector; a new selector is matched against every known identity. */
  add(selector: Selector): void {
    const have = this.entries.get(selector.key);
    if (have) {
      have.users++;
      return;
    }
    const e: Entry = { selector, ids: new Set(), users: 1 };
    this.entries.set(selector.key, e);
    for (const id of this.identities.values()) if (this.matches(selector, id)) this.select(e, id.id);
  }

  /** Drops a user of a selector; the last one removes it. */
  remove(selector: Selector): void {
    const e = this.entries.get(selector.key);
    if (!e || --e.users > 0) return;
    this.entries.delete(selector.key);
    for (const id of e.ids) removeFrom(this.selectedBy, id, selector.key);
  }

  /** Identities a cached selector selects (empty for an unknown selector). */
  identitiesOf(key: string): ReadonlySet<number> {
    return this.entries.get(key)?.ids ?? EMPTY;
  }

  /** Keys of the cached selectors that select an identity. */
  selectorsOf(id: number): ReadonlySet<string> {
    return this.selectedBy.get(id) ?? EMPTY_KEYS;
  }

  /** The identity the cache knows under a number. */
  identity(id: number): Identity | undefined {
    return this.identities.get(id);
  }

  /** Every cached selector. */
  list(): CachedSelector[] {
    return [...this.entries.values()]
      .map((e) => ({ selector: e.selector.key, identities: [...e.ids].sort((a, b) => a - b), users: e.users }))
      .sort((a, b) => a.selector.localeCompare(b.selector));
  }

  private select(e: Entry, id: number): void {
    e.ids.add(id);
    addTo(this.selectedBy, id, e.selector.key);
  }

  /**
   * The addresses of these identities' endpoints changed: every `byAddress` selector is matched
   * against them again; the listener is told once per identity whose selection changed (as for an
   * identity change of kind `add`, the identity still existing).
   */
  onAddresses(ids: Iterable<number>): void {
    const byAddress = [...this.entries.values()].filter((e) => e.selector.byAddress);
    if (byAddress.length === 0) return;
    for (const n of ids) {
      const id = this.identities.get(n);
      if (!id) continue;
      const changed: string[] = [];
      for (const e of byAddress) {
        const now = this.matches(e.selector, id);
        if (now === e.ids.has(n)) continue;
        if (now) this.select(e, n);
        else {
          e.ids.delete(n);
          removeFrom(this.selectedBy, n, e.selector.key);
        }
        changed.push(e.selector.key);
      }
      if (changed.length) this.listener?.(changed, { kind: 'add', identity: id });
    }
  }

  /** An identity added or deleted: the selections it changes are updated and the listener told. */
  onIdentity(c: IdentityChange): void {
    const id = c.identity;
    const changed: string[] = [];
    if (c.kind === 'add') {
      this.identities.set(id.id, id);
      for (const e of this.entries.values()) {
        if (this.matches(e.selector, id)) {
          this.select(e, id.id);
          changed.push(e.selector.key);
        }
      }
    } else {
      this.identities.delete(id.id);
      for (const key of this.selectedBy.get(id.id) ?? []) {
        this.entries.get(key)?.ids.delete(id.id);
        changed.push(key);
      }
      this.selectedBy.delete(id.id);
    }
    this.listener?.(changed, c);
  }
}

const EMPTY: ReadonlySet<number> = new Set();
const EMPTY_KEYS: ReadonlySet<string> = new Set();
