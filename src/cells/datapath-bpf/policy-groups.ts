/**
 * Shared policy maps (--bpf-lxc-program=shared): endpoints whose policy map state is the same
 * (the same content id: every lookup answers alike) share ONE policy map, which the slot of each
 * in cellium_policy_maps points at. 250 rules selecting 4,000 endpoints are then one map of
 * ~4,250 entries instead of 4,000 copies (17 M LPM entries).
 *
 * - A group is one map and its members (endpoints whose slot points at it); the group whose
 *   content is that of a policy is found by content id. A map no slot uses is let go (this
 *   process closes its fd; the kernel frees it once no slot or pin holds it).
 * - Realizing an endpoint's policy (the policy table's reconciler): it joins the group of its new
 *   content, filled completely before any slot points at it; when there is none and every member
 *   of its current group wants that same content (a change reaching all of them, or a group of
 *   one), that group's map is rewritten in place by difference (new entries, then stale ones
 *   deleted, as a per-endpoint map is); otherwise a new map is filled. A slot moves atomically
 *   from the old map to the new one, never through an empty or a wider map; the moves of one
 *   round are one batch write (one RCU grace period for all).
 * - Each endpoint's `cellium_policy_<id>` pins its group's map (several names, one map), so every
 *   reader of an endpoint's policy map (dumps, the verdict, explain, bpftool) reads that endpoint's
 *   policy. The content is not in the name: a restarted agent recovers the groups from the slots
 *   (slot -> map id -> map) and reads each map's entries once for its content id, since a name
 *   claiming a content could be wrong after a crash in the middle of a rewrite.
 * - A new endpoint's load points its slot at the group of the empty policy (every packet but the
 *   always-allowed ones drops) until its policy is realized; one whose slot is empty but whose
 *   `cellium_policy_<id>` is pinned (per-endpoint maps of a previous release) gets that map first,
 *   so its verdicts do not change until its policy is realized.
 */
import { loadAddon } from '../../bpf/native.js';
import { sys } from '../../bpf/errors.js';
import { BpfMap } from '../../bpf/index.js';
import { TypedMap } from '../../bpf/typed-map.js';
import { OBJECT_POLICY_MAP, POLICY_MAP_SPEC, policyContentId, policyKeyCodec, policyMapPath, policyValueCodec, type PolicyLpmEntry, type PolicyMap } from '../../maps/index.js';
import type { KernelMaps } from './kernel-maps.js';
import { encoded, kernelEntries, writePolicy } from './tables.js';

/** One shared policy map and the endpoints whose slot points at it. */
export interface PolicyGroup {
  readonly map: PolicyMap;
  readonly mapId: number;
  /** What the map holds (as this agent wrote or read it). */
  entries: readonly PolicyLpmEntry[];
  /** policyContentId(entries). */
  content: string;
  readonly members: Set<number>;
}

/** One endpoint's policy to realize. */
export interface GroupWrite {
  readonly endpointId: number;
  readonly entries: readonly PolicyLpmEntry[];
}

/** Counters, for status and tests. */
export interface PolicyGroupStats {
  readonly groups: number;
  readonly members: number;
  /** Maps filled anew, rewritten in place, slots moved, maps let go (since start). */
  readonly created: number;
  readonly rewritten: number;
  readonly moved: number;
  readonly released: number;
}

const EMPTY: readonly PolicyLpmEntry[] = [];

/** See the module comment. */
export class PolicyGroups {
  private readonly byContent = new Map<string, PolicyGroup>();
  private readonly byMapId = new Map<number, PolicyGroup>();
  private readonly member = new Map<number, PolicyGroup>();
  /** Per endpoint, the map id its `cellium_policy_<id>` was last pinned to (or found pinning). */
  private readonly pinned = new Map<number, number>();
  private lock: Promise<unknown> = Promise.resolve();
  private counts = { created: 0, rewritten: 0, moved: 0, released: 0 };

  constructor(private readonly kernel: KernelMaps, private readonly maxEntries: number) {}

  /** The group an endpoint's slot points at (as far as this agent knows). */
  groupOf(endpointId: number): PolicyGroup | undefined {
    return this.member.get(endpointId);
  }

  /** Every group. */
  groups(): PolicyGroup[] {
    return [...this.byMapId.values()];
  }

  /** Counters. */
  stats(): PolicyGroupStats {
    let members = 0;
    for (const g of this.byMapId.values()) members += g.members.size;
    return { groups: this.byMapId.size, members, ...this.counts };
  }

  /**
   * At start: the groups of the slots the kernel holds (a slot's map opened by id, its entries read
   * once per map), each endpoint's `cellium_policy_<id>` pinned to its slot's map when it names
   * another. Returns what could not be recovered (those endpoints keep their slot until realized).
   */
  recover(): string[] {
    const problems: string[] = [];
    for (const [id, mapId] of this.kernel.policySlots.slots()) {
      try {
        this.adoptSlot(id, mapId);
      } catch (err) {
        problems.push(`endpoint ${id}: ${(err as Error).message}`);
      }
    }
    return problems;
  }

  /**
   * An endpoint's load: its slot points at its group's map (repaired when it does not); one not in
   * a group yet joins the map its slot holds, else its pinned `cellium_policy_<id>`, else the
   * empty policy's group.
   */
  attach(endpointId: number): Promise<void> {
    return this.exclusive(async () => {
      let g = this.member.get(endpointId) ?? this.adoptSlot(endpointId);
      if (!g) {
        const pinned = this.kernel.pinnedPolicyId(endpointId);
        g = pinned !== undefined ? this.byMapId.get(pinned) ?? this.adopt(this.openPinned(endpointId)) : this.groupFor(EMPTY);
        this.join(endpointId, g);
      }
      await this.kernel.policySlots.setVisible(endpointId, g.map.map);
      this.ensurePin(endpointId, g);
    });
  }

  /** Why endpoint `endpointId`'s slot does not point at its group's map, or undefined when it does. */
  slotMismatch(endpointId: number): string | undefined {
    const g = this.member.get(endpointId);
    const slot = this.kernel.policySlots.get(endpointId);
    if (g && slot === g.mapId) return undefined;
    return `its slot in cellium_policy_maps (${slot === undefined ? 'empty' : `map id ${slot}`}) does not hold its policy map (${g ? `map id ${g.mapId}` : 'none realized'}): it was changed by hand`;
  }

  /**
   * Realizes the policies of `batch` (see the module comment); `wanted(id)` is the policy each
   * endpoint is to have (for the members of a group outside the batch). Returns the endpoints whose
   * policy could not be realized, with why.
   */
  realize(batch: readonly GroupWrite[], wanted: (endpointId: number) => readonly PolicyLpmEntry[] | undefined): Promise<Map<number, Error>> {
    return this.exclusive(async () => {
      const failed = new Map<number, Error>();
      const todo = new Map<string, { entries: readonly PolicyLpmEntry[]; ids: number[] }>();
      for (const w of batch) {
        const content = policyContentId(w.entries);
        const cur = this.member.get(w.endpointId);
        if (cur && cur.content === content && this.byContent.get(content) === cur) {
          this.tryPin(w.endpointId, cur, failed);
          continue;
        }
        const t = todo.get(content);
        if (t) t.ids.push(w.endpointId);
        else todo.set(content, { entries: w.entries, ids: [w.endpointId] });
      }
      // targets that exist first: a map some endpoint moves to keeps its content this round
      const targets = new Map<string, PolicyGroup>();
      for (const content of todo.keys()) {
        const g = this.byContent.get(content);
        if (g) targets.set(content, g);
      }
      const targeted = new Set(targets.values());
      for (const [content, t] of todo) {
        if (targets.has(content)) continue;
        try {
          const g = this.rewriteInPlace(t.ids, content, t.entries, wanted, targeted) ?? this.create(t.entries);
          targets.set(content, g);
          targeted.add(g);
        } catch (err) {
          for (const id of t.ids) failed.set(id, err as Error);
        }
      }
      const moves: [number, PolicyGroup][] = [];
      for (const [content, t] of todo) {
        const g = targets.get(content);
        if (!g) continue;
        for (const id of t.ids) {
          if (this.member.get(id) === g) this.tryPin(id, g, failed);
          else moves.push([id, g]);
        }
      }
      await this.move(moves, failed);
      return failed;
    });
  }

  /** An endpoint's policy is gone (it is deleted): its slot emptied, its pin removed, its group let go when it was the last. */
  leave(endpointId: number): Promise<void> {
    return this.exclusive(async () => {
      await this.kernel.policySlots.empty(endpointId);
      this.kernel.removePolicy(endpointId);
      this.forget(endpointId);
    });
  }

  /** Drops an endpoint from its group (its slot and pin were removed by the caller). */
  forget(endpointId: number): void {
    const g = this.member.get(endpointId);
    this.member.delete(endpointId);
    this.pinned.delete(endpointId);
    if (g) {
      g.members.delete(endpointId);
      this.releaseIfUnused(g);
    }
  }

  /**
   * What the kernel holds for each endpoint of `ids` (the prune): the entries of the map its slot
   * points at, read once per map. A group whose map holds other entries than it was given (edited
   * by hand) takes the kernel's content, and an endpoint whose slot points elsewhere than its group
   * joins the group of that map, so the next realize repairs both; a `cellium_policy_<id>` that
   * no longer names the endpoint's map is pinned again.
   */
  list(ids: Iterable<number>): Promise<Map<number, readonly PolicyLpmEntry[]>> {
    return this.exclusive(async () => {
      for (const g of [...this.byMapId.values()]) {
        const now = kernelEntries(g.map);
        const content = policyContentId(now);
        if (content === g.content) continue;
        if (this.byContent.get(g.content) === g) this.byContent.delete(g.content);
        g.entries = now;
        g.content = content;
        if (!this.byContent.has(content)) this.byContent.set(content, g);
      }
      const out = new Map<number, readonly PolicyLpmEntry[]>();
      for (const id of ids) {
        const slot = this.kernel.policySlots.get(id);
        if (slot === undefined) {
          if (this.member.has(id)) this.forget(id);
          continue;
        }
        let g = this.member.get(id);
        if (!g || g.mapId !== slot) {
          this.forget(id);
          try {
            g = this.adoptSlot(id);
          } catch {
            continue; // its map went meanwhile: listed as missing, so it is realized again
          }
        }
        if (!g) continue;
        out.set(id, g.entries);
        // the endpoint's name of its map (removed or replaced by hand): pinned again
        if (this.kernel.pinnedPolicyId(id) !== g.mapId) {
          this.pinned.delete(id);
          try {
            this.ensurePin(id, g);
          } catch {
            // retried at the next prune; the slot, which is what the program reads, is right
          }
        }
      }
      return out;
    });
  }

  /** Lets go of every map (the slots and pins keep them in the kernel). */
  close(): void {
    for (const g of this.byMapId.values()) g.map.close();
    this.byMapId.clear();
    this.byContent.clear();
    this.member.clear();
    this.pinned.clear();
  }

  /** Runs `fn` after every operation started before it (slot writes of one endpoint never cross). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.lock.then(fn, fn);
    this.lock = p.catch(() => undefined);
    return p;
  }

  /** The group of the map in an endpoint's slot (opened by id when new to this agent), joined; undefined when the slot is empty. */
  private adoptSlot(endpointId: number, mapId = this.kernel.policySlots.get(endpointId)): PolicyGroup | undefined {
    if (mapId === undefined) return undefined;
    const g = this.byMapId.get(mapId) ?? this.adopt(openById(mapId));
    this.join(endpointId, g);
    this.ensurePin(endpointId, g);
    return g;
  }

  /** A map this agent did not make (a slot's or a pin's): its entries read, indexed by content unless another group has that content. */
  private adopt(map: PolicyMap): PolicyGroup {
    try {
      const entries = kernelEntries(map);
      const g: PolicyGroup = { map, mapId: map.map.info.id, entries, content: policyContentId(entries), members: new Set() };
      this.byMapId.set(g.mapId, g);
      if (!this.byContent.has(g.content)) this.byContent.set(g.content, g);
      return g;
    } catch (err) {
      map.close();
      throw err;
    }
  }

  /** An endpoint's pinned `cellium_policy_<id>`, on a handle of this registry's own. */
  private openPinned(endpointId: number): PolicyMap {
    return new TypedMap(BpfMap.openPinned(policyMapPath(this.kernel.root, endpointId)), policyKeyCodec, policyValueCodec);
  }

  /** The group holding `entries`, a new map filled with them when there is none. */
  private groupFor(entries: readonly PolicyLpmEntry[]): PolicyGroup {
    return this.byContent.get(policyContentId(entries)) ?? this.create(entries);
  }

  /** A new map holding `entries` (one batch write), indexed by its content. */
  private create(entries: readonly PolicyLpmEntry[]): PolicyGroup {
    const raw = BpfMap.create({ ...POLICY_MAP_SPEC, name: OBJECT_POLICY_MAP, maxEntries: this.maxEntries });
    const map: PolicyMap = new TypedMap(raw, policyKeyCodec, policyValueCodec);
    try {
      if (entries.length) {
        const e = encoded(entries);
        raw.updateBatch(e.keys, e.values, entries.length);
      }
    } catch (err) {
      map.close();
      throw err;
    }
    const g: PolicyGroup = { map, mapId: raw.info.id, entries, content: policyContentId(entries), members: new Set() };
    this.byMapId.set(g.mapId, g);
    this.byContent.set(g.content, g);
    this.counts.created++;
    return g;
  }

  /**
   * The group of `ids` rewritten in place to `entries`, when one of their groups is no other
   * endpoint's move target this round and every one of its members wants exactly `content`.
   */
  private rewriteInPlace(
    ids: readonly number[], content: string, entries: readonly PolicyLpmEntry[],
    wanted: (endpointId: number) => readonly PolicyLpmEntry[] | undefined, targeted: ReadonlySet<PolicyGroup>,
  ): PolicyGroup | undefined {
    const seen = new Set<PolicyGroup>();
    for (const id of ids) {
      const g = this.member.get(id);
      if (!g || seen.has(g) || targeted.has(g)) continue;
      seen.add(g);
      if (![...g.members].every((m) => { const w = wanted(m); return w !== undefined && policyContentId(w) === content; })) continue;
      if (this.byContent.get(g.content) === g) this.byContent.delete(g.content);
      try {
        writePolicy(g.map, g.entries, entries);
      } catch (err) {
        // partly written: what the map holds now is read back (its members are retried)
        g.entries = kernelEntries(g.map);
        g.content = policyContentId(g.entries);
        if (!this.byContent.has(g.content)) this.byContent.set(g.content, g);
        throw err;
      }
      g.entries = entries;
      g.content = content;
      this.byContent.set(content, g);
      this.counts.rewritten++;
      return g;
    }
    return undefined;
  }

  /** Points the slots of `moves` at their groups' maps (one batch), then their pins; the groups they left are let go when unused. */
  private async move(moves: readonly [number, PolicyGroup][], failed: Map<number, Error>): Promise<void> {
    if (moves.length === 0) return;
    let error: Error | undefined;
    try {
      await this.kernel.policySlots.setManyVisible(moves.map(([id, g]) => [id, g.map.map] as const));
    } catch (err) {
      error = err as Error;
    }
    const left = new Set<PolicyGroup>();
    for (const [id, g] of moves) {
      // after a failed batch, each slot is read back: what it holds is what happened
      if (error && this.kernel.policySlots.get(id) !== g.mapId) {
        failed.set(id, error);
        continue;
      }
      const old = this.member.get(id);
      if (old) left.add(old);
      this.join(id, g);
      this.counts.moved++;
      this.tryPin(id, g, failed);
    }
    for (const g of left) this.releaseIfUnused(g);
  }

  private join(endpointId: number, g: PolicyGroup): void {
    const old = this.member.get(endpointId);
    if (old === g) return;
    old?.members.delete(endpointId);
    g.members.add(endpointId);
    this.member.set(endpointId, g);
  }

  /** Pins `cellium_policy_<id>` to the group's map unless it names it already. */
  private ensurePin(endpointId: number, g: PolicyGroup): void {
    const known = this.pinned.get(endpointId);
    if (known === g.mapId) return;
    // a name this registry pinned (to another map) is re-pinned without reading it back first
    if (known !== undefined || this.kernel.pinnedPolicyId(endpointId) !== g.mapId) this.kernel.pinPolicy(endpointId, g.map.map);
    this.pinned.set(endpointId, g.mapId);
  }

  private tryPin(endpointId: number, g: PolicyGroup, failed: Map<number, Error>): void {
    try {
      this.ensurePin(endpointId, g);
    } catch (err) {
      failed.set(endpointId, err as Error);
    }
  }

  /** Lets go of a group no endpoint uses any more. */
  private releaseIfUnused(g: PolicyGroup): void {
    if (g.members.size > 0 || !this.byMapId.has(g.mapId)) return;
    this.byMapId.delete(g.mapId);
    if (this.byContent.get(g.content) === g) this.byContent.delete(g.content);
    g.map.close();
    this.counts.released++;
  }
}

/** A policy map opened by its kernel id (a slot's). */
function openById(mapId: number): PolicyMap {
  const a = loadAddon();
  return new TypedMap(BpfMap.fromFd(sys(() => a.mapGetFdById(mapId))), policyKeyCodec, policyValueCodec);
}
