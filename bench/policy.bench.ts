/**
 * Policy benchmarks (issue 3):
 *  1. resolve one endpoint with 20,000 rules of which none selects it (Cilium's
 *     BenchmarkResolveNoMatchingRules shape; Cilium reports 1.6 ms/op, target <= 2 ms);
 *  2. 250 rules selecting all endpoints x 100 endpoints resolved (target <= 0.5 s).
 * Each against a baseline in the same run: a naive full scan testing every rule's selector
 * against the endpoint's labels, then the same distillation.
 */
import { Subject } from 'rxjs';
import { makeIdentity, reservedIdentities, type Identity, type IdentityAllocator, type IdentityChange } from '../src/cells/identity/index.js';
import { Repository, SelectorCache, distill, resolveDenies } from '../src/cells/policy/index.js';
import type { PolicyEntry } from '../src/datapath/types.js';
import type { CompiledRule } from '../src/cells/policy/rule.js';
import type { Selector } from '../src/cells/policy/selector.js';
import { labelsKey, parseLabels, type Label } from '../src/lib/labels.js';
import { printTable, sample, stats, time } from './lib/report.js';

/** A synchronous in-memory allocator (the benchmark measures policy, not identity allocation). */
class BenchAllocator implements IdentityAllocator {
  readonly range = { minGlobal: 256, maxGlobal: 65535, localScope: 1 << 24 };
  private readonly subject = new Subject<IdentityChange>();
  readonly changes$ = this.subject.asObservable();
  private readonly ids = new Map<number, Identity>(reservedIdentities);
  private readonly byKey = new Map<string, Identity>();
  private next = 256;
  private nextLocal = (1 << 24) + 1;
  add(labels: string[]): Identity {
    const ls = parseLabels(labels);
    const i = makeIdentity(this.next++, ls, false);
    this.ids.set(i.id, i);
    this.byKey.set(labelsKey(ls), i);
    this.subject.next({ kind: 'add', identity: i });
    return i;
  }
  async allocate(labels: readonly Label[]) { return { identity: this.byKey.get(labelsKey(labels)) ?? this.add(labels.map((l) => `${l.source}:${l.key}=${l.value}`)), isNew: false }; }
  async allocateCIDR(cidr: string) { return makeIdentity(this.nextLocal++, parseLabels([`cidr:${cidr}`]), false); }
  async release() { return false; }
  lookup(id: number) { return this.ids.get(id); }
  lookupByLabels(labels: readonly Label[]) { return this.byKey.get(labelsKey(labels)); }
  list() { return [...this.ids.values()]; }
  async gc() { return 0; }
}

function setup(): { alloc: BenchAllocator; repo: Repository } {
  const alloc = new BenchAllocator();
  const cache = new SelectorCache(alloc);
  alloc.changes$.subscribe((c) => cache.onIdentity(c));
  return { alloc, repo: new Repository(cache, alloc) };
}

/**
 * Naive distillation baseline: every (rule, entry, peer, identity, port) expanded into an object
 * and de-duplicated by its JSON, deny over allow, without sharing identical peer/port pairs.
 */
function naiveExpand(rules: readonly CompiledRule[], peers: (s: Selector) => Iterable<number>): PolicyEntry[] {
  const map = new Map<string, PolicyEntry>();
  for (const r of rules) for (const s of r.sections) for (const sel of s.peers) for (const identity of peers(sel)) {
    for (const p of s.ports.length ? s.ports : [{ protocol: 0, port: 0 }]) {
      const e: PolicyEntry = { identity, direction: s.direction, protocol: p.protocol, port: p.port, ...('endPort' in p && p.endPort ? { endPort: p.endPort } : {}), deny: s.deny };
      const k = JSON.stringify({ ...e, deny: undefined });
      const have = map.get(k);
      if (!have || (e.deny && !have.deny)) map.set(k, e);
    }
  }
  return resolveDenies([...map.values()]);
}

/** Naive baseline: every rule's subject is tested against the endpoint. */
function naiveResolve(all: readonly CompiledRule[], id: Identity, repo: Repository, cache: (s: Selector) => Iterable<number>) {
  return distill(all.filter((r) => r.subject.matches(id)), cache, repo.revision);
}

async function noMatching(): Promise<void> {
  const { alloc, repo } = setup();
  const endpoint = alloc.add(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']);
  const peers = Array.from({ length: 50 }, (_, i) => alloc.add([`k8s:app=peer-${i}`, 'k8s:io.kubernetes.pod.namespace=default']));
  const rules = Array.from({ length: 20_000 }, (_, i) => ({
    endpointSelector: { matchLabels: { app: `rule-${i}` } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: `peer-${i % 50}` } }], toPorts: [{ ports: [{ port: String(1000 + (i % 5000)), protocol: 'TCP' }] }] }],
  }));
  const importMs = await time(() => repo.import(JSON.stringify(rules)));
  const compiled = repo.compiled();
  const cache = (s: Selector) => repo.identitiesOf(s);
  const runs = 2000;
  const ours = stats(await sample(runs, () => repo.resolve(endpoint)));
  const naive = stats(await sample(200, () => naiveResolve(compiled, endpoint, repo, cache)));
  const entries = repo.resolve(endpoint).entries.length;
  printTable(`policy: resolve one endpoint, 20,000 rules, none selects it (${peers.length} peer identities; import took ${Math.round(importMs)} ms)`,
    ['what', 'p50 ms/op', 'p99 ms/op', 'mean ms/op', 'entries', 'target'], [
      ['ours: selector index (identity -> selectors -> rules)', ours.p50Ms, ours.p99Ms, ours.meanMs, entries, '<= 2 ms (Cilium 1.6 ms)'],
      ['baseline: full scan of every rule', naive.p50Ms, naive.p99Ms, naive.meanMs, entries, ''],
    ]);
}

async function allSelecting(): Promise<void> {
  const { alloc, repo } = setup();
  const endpoints = Array.from({ length: 100 }, (_, i) => alloc.add([`k8s:app=${i < 10 ? `client-${i}` : `svc-${i}`}`, 'k8s:env=prod', 'k8s:io.kubernetes.pod.namespace=default']));
  const rules = Array.from({ length: 250 }, (_, i) => ({
    endpointSelector: { matchLabels: { env: 'prod' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: `client-${i % 10}` } }], toPorts: [{ ports: [{ port: String(1000 + i), protocol: 'TCP' }] }] }],
    egress: [{ toEntities: ['world'], toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }] }, { toEndpoints: [{ matchLabels: { env: 'prod' } }] }],
    ...(i % 25 === 0 ? { ingressDeny: [{ fromEndpoints: [{ matchLabels: { app: `client-${i % 10}` } }], toPorts: [{ ports: [{ port: String(1000 + i), endPort: 1000 + i + 3, protocol: 'TCP' }] }] }] } : {}),
  }));
  repo.import(JSON.stringify(rules));
  const compiled = repo.compiled();
  const cache = (s: Selector) => repo.identitiesOf(s);
  const runs = 10;
  let entries = 0;
  const ours = stats(await sample(runs, () => {
    entries = 0;
    for (const e of endpoints) entries += repo.resolve(e).entries.length;
  }));
  const naive = stats(await sample(runs, () => {
    for (const e of endpoints) naiveResolve(compiled, e, repo, cache);
  }));
  const expand = stats(await sample(runs, () => {
    for (const e of endpoints) naiveExpand(compiled.filter((r) => r.subject.matches(e)), cache);
  }, 1));
  printTable(`policy: 250 rules selecting all endpoints x 100 endpoints resolved (${runs} runs; ${entries} map entries in all)`,
    ['what', 'p50 ms', 'p99 ms', 'mean ms', 'target'], [
      ['ours: resolve 100 endpoints', ours.p50Ms, ours.p99Ms, ours.meanMs, '<= 500 ms'],
      ['baseline: full scan + the same distillation', naive.p50Ms, naive.p99Ms, naive.meanMs, ''],
      ['baseline: full scan + naive expansion (no sharing)', expand.p50Ms, expand.p99Ms, expand.meanMs, ''],
    ]);
}

await noMatching();
await allSelecting();
