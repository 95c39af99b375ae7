/**
 * A consumer's cell test under node:test (test/package copies it into a fresh project): the
 * identity cell with its backend replaced by a mock, through cellium/hive's testHive.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { invoke, testHive } from 'cellium/hive';
import { identityCell, IdentityAllocatorToken, IdentityBackendToken, parseLabels, type IdentityAllocator, type IdentityBackend, type StoredIdentity } from 'cellium/cells/identity';
import { statedirCell } from 'cellium/cells/statedir';

/** The cells under test; the invoke makes the hive build the allocator before it starts (its restore hook runs at start). */
const cells = [statedirCell, identityCell, invoke('test-uses-allocator', (_a: IdentityAllocator) => undefined, IdentityAllocatorToken)];

/** A backend that keeps identities in a Map and records every claim. */
class MockBackend implements IdentityBackend {
  readonly name = 'mock';
  readonly claims: string[] = [];
  private readonly byKey = new Map<string, StoredIdentity>();
  constructor(private readonly preloaded: StoredIdentity[] = []) {}
  async load(): Promise<readonly StoredIdentity[]> {
    return this.preloaded;
  }
  async claim(key: string, labels: readonly string[], id: number): Promise<number | undefined> {
    this.claims.push(key);
    const had = this.byKey.get(key);
    if (had) return had.id;
    this.byKey.set(key, { id, labels: [...labels] });
    return id;
  }
  async remove(key: string): Promise<void> {
    this.byKey.delete(key);
  }
  async close(): Promise<void> {}
}

test('the identity cell records new identities in the backend it is given', async (t) => {
  const backend = new MockBackend();
  const h = await testHive(t, cells, { replace: [[IdentityBackendToken, backend]], config: { 'state-dir': '/nonexistent-cellium-consumer' } });
  const alloc = h.get(IdentityAllocatorToken);
  const { identity, isNew } = await alloc.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=shop']));
  assert.equal(isNew, true);
  assert.ok(identity.id >= 256, `a global identity (got ${identity.id})`);
  assert.deepEqual(backend.claims, ['k8s:app=web;k8s:io.kubernetes.pod.namespace=shop']);
});

test('an identity the backend already holds keeps its number', async (t) => {
  const backend = new MockBackend([{ id: 4242, labels: ['k8s:app=db'] }]);
  const h = await testHive(t, cells, { replace: [[IdentityBackendToken, backend]], config: { 'state-dir': '/nonexistent-cellium-consumer' } });
  const { identity } = await h.get(IdentityAllocatorToken).allocate(parseLabels(['k8s:app=db']));
  assert.equal(identity.id, 4242);
});
