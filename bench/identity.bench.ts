/**
 * Identity benchmark: allocations per second through the IdentityAllocator — new label sets with
 * the embedded backend (persisted to a temp state dir, writes coalesced), new label sets with an
 * in-memory backend, and repeated allocations of a known set (reference counting) — against a
 * baseline of a bare Map from the sorted label key to a number, measured in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedBackend, LocalIdentityAllocator, type IdentityBackend, type StoredIdentity } from '../src/cells/identity/index.js';
import { labelsKey, parseLabels, type Label } from '../src/lib/labels.js';
import { printTable, time } from './lib/report.js';

const N = 5000;

/** A backend that keeps the table in memory only. */
class MemoryBackend implements IdentityBackend {
  readonly name = 'memory';
  private readonly byKey = new Map<string, StoredIdentity>();
  async load() { return []; }
  async claim(key: string, labels: readonly string[], id: number) {
    const have = this.byKey.get(key);
    if (have) return have.id;
    this.byKey.set(key, { id, labels });
    return id;
  }
  async remove(key: string) { this.byKey.delete(key); }
  async close() {}
}

const labelSets: Label[][] = Array.from({ length: N }, (_, i) => parseLabels([`k8s:app=app-${i}`, 'k8s:io.kubernetes.pod.namespace=bench', `k8s:version=v${i % 7}`]));

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-identity-bench-'));
  try {
    const rows: (string | number)[][] = [];
    const add = (what: string, ms: number, n = N) => rows.push([what, n, ms, (n / ms) * 1000]);

    const embedded = new LocalIdentityAllocator(new EmbeddedBackend(join(dir, 'identities.json')));
    await embedded.load();
    add('new label sets, embedded backend, concurrent (writes coalesced)', await time(() => Promise.all(labelSets.map((ls) => embedded.allocate(ls)))));
    const seq = new LocalIdentityAllocator(new EmbeddedBackend(join(dir, 'seq.json')));
    await seq.load();
    add('new label sets, embedded backend, one at a time (a write each)', await time(async () => {
      for (const ls of labelSets.slice(0, 500)) await seq.allocate(ls);
    }), 500);
    const mem = new LocalIdentityAllocator(new MemoryBackend());
    add('new label sets, in-memory backend, one at a time', await time(async () => {
      for (const ls of labelSets) await mem.allocate(ls);
    }));
    add('known label sets (reference counted), one at a time', await time(async () => {
      for (const ls of labelSets) await mem.allocate(ls);
    }));
    const baseline = new Map<string, number>();
    let next = 256;
    add('baseline: Map sorted-label key -> number', await time(() => {
      for (const ls of labelSets) {
        const k = labelsKey(ls);
        if (!baseline.has(k)) baseline.set(k, next++);
      }
    }));
    await embedded.close();
    await seq.close();
    printTable(`identity: allocations (${N} label sets of 3 labels)`, ['what', 'allocations', 'total ms', 'per second'], rows);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
