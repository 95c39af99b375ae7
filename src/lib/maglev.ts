/**
 * Maglev consistent hashing (Eisenbud et al., NSDI 2016, as Cilium's pkg/maglev builds it): each
 * backend has a permutation of the table's M slots (offset and skip from two hashes of its name);
 * backends take turns claiming their next free slot, a backend of weight w taking w turns for
 * every `max weight` turns, until every slot is claimed. M is prime, so each permutation covers the
 * table. Removing one of N backends moves about 1/N of the slots.
 */
import { createHash } from 'node:crypto';

/** A backend in the table: its ID (what a slot holds), its name (what it hashes) and its weight. */
export interface MaglevBackend {
  readonly id: number;
  readonly name: string;
  readonly weight: number;
}

function hashes(name: string, seed: string): [number, number] {
  const d = createHash('sha256').update(seed).update(name).digest();
  return [d.readUInt32LE(0), d.readUInt32LE(4)];
}

/** The lookup table of `m` slots (prime) over `backends` (weight 0 takes none); all zero without backends. */
export function maglevTable(backends: readonly MaglevBackend[], m: number, seed = 'cellium'): Uint32Array {
  const table = new Uint32Array(m);
  const bs = [...backends].filter((b) => b.weight > 0).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (!bs.length) return table;
  const offset = new Array<number>(bs.length);
  const skip = new Array<number>(bs.length);
  bs.forEach((b, i) => {
    const [h1, h2] = hashes(b.name, seed);
    offset[i] = h1 % m;
    skip[i] = (h2 % (m - 1)) + 1;
  });
  const next = new Array<number>(bs.length).fill(0);
  const credit = new Array<number>(bs.length).fill(0);
  const maxW = Math.max(...bs.map((b) => b.weight));
  const taken = new Uint8Array(m);
  let filled = 0;
  while (filled < m) {
    for (let i = 0; i < bs.length && filled < m; i++) {
      credit[i]! += bs[i]!.weight;
      if (credit[i]! < maxW) continue;
      credit[i]! -= maxW;
      let c = (offset[i]! + next[i]! * skip[i]!) % m;
      while (taken[c]) {
        next[i]!++;
        c = (offset[i]! + next[i]! * skip[i]!) % m;
      }
      taken[c] = 1;
      table[c] = bs[i]!.id;
      next[i]!++;
      filled++;
    }
  }
  return table;
}
