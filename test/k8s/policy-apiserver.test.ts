// The policy-k8s cell against a real apiserver (scripts/k8s.sh): the whole agent hive with a
// kubeconfig; NetworkPolicies and CiliumNetworkPolicies applied with kubectl reach the policy
// repository with their origin labels, are replaced on update and removed on delete; an invalid CNP
// is not applied (its previous valid version stays), the error names the field in a Kubernetes
// Event on the object and in the job's health; a policy deleted while the agent was stopped is
// removed at the next start's sync.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HealthTreeToken, type HealthNode } from '../../src/hive/health.js';
import { silentLogger } from '../../src/hive/logger.js';
import type { TestLike } from '../../src/hive/testing.js';
import { K8sClientToken } from '../../src/cells/k8s/index.js';
import { ensureCrds } from '../../src/cells/k8s/crds.js';
import { PolicyRepositoryToken, type PolicyRepository } from '../../src/cells/policy/index.js';
import { startAgent, type TestAgent } from '../api-integration/agent.js';
import { k8sSkip, startCluster, type Cluster } from './cluster.js';
import { kubectlOk, until } from './util.js';

const skip = k8sSkip();

const NP = 'k8s:io.cilium.k8s.policy.derived-from=NetworkPolicy';
const CNP = 'k8s:io.cilium.k8s.policy.derived-from=CiliumNetworkPolicy';
const named = (name: string, ns = 'default'): string[] => [`k8s:io.cilium.k8s.policy.name=${name}`, `k8s:io.cilium.k8s.policy.namespace=${ns}`];

function netpol(name: string, port: number): string {
  return JSON.stringify({
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: 'default' },
    spec: { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port }] }] },
  });
}

function cnp(name: string, cidr: string): string {
  return JSON.stringify({
    apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace: 'default' },
    spec: { endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{ fromCIDR: [cidr] }] },
  });
}

function findNode(tree: HealthNode, pred: (n: HealthNode) => boolean): HealthNode | undefined {
  if (pred(tree)) return tree;
  for (const c of tree.children) {
    const f = findNode(c, pred);
    if (f) return f;
  }
  return undefined;
}

async function agent(t: TestLike, c: Cluster, stateDir: string): Promise<{ a: TestAgent; repo: PolicyRepository }> {
  const a = await startAgent(t, { 'k8s-kubeconfig-path': c.kubeconfig, 'k8s-node-name': 'node-a', 'state-dir': stateDir });
  return { a, repo: a.h.get(PolicyRepositoryToken) };
}

t.test('NetworkPolicies and CNPs from the apiserver in the policy repository', { skip }, async (t) => {
  const c = await startCluster(t);
  const stateDir = mkdtempSync(join(tmpdir(), 'cellium-polk8s-'));
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }));
  const { a, repo } = await agent(t, c, stateDir);
  await ensureCrds(a.h.get(K8sClientToken), silentLogger());

  // add: the translated rule, with its origin labels
  await kubectlOk(c, ['apply', '-f', '-'], netpol('web', 80));
  const rules = await until('the NetworkPolicy rule', () => { const r = repo.get([NP, ...named('web')]); return r.length ? r : undefined; });
  t.equal(rules.length, 1, 'one rule per NetworkPolicy');
  t.match(JSON.stringify(rules[0]), /"port":"80"/, 'port 80');
  t.ok(rules[0].labels?.some((l) => l.startsWith('k8s:io.cilium.k8s.policy.uid=')), 'the uid is among its origin labels');
  const viaApi = JSON.stringify(await a.client.getPolicy([NP, ...named('web')]));
  t.match(viaApi, /io\.cilium\.k8s\.policy\.name=web/, 'GET /policy (cellium policy get) shows it with its origin');

  // update: replaced, not added
  await kubectlOk(c, ['apply', '-f', '-'], netpol('web', 8080));
  await until('the updated rule', () => JSON.stringify(repo.get([NP, ...named('web')])).includes('"port":"8080"'));
  t.equal(repo.get([NP, ...named('web')]).length, 1, 'the update replaced the old version');
  t.notMatch(JSON.stringify(repo.get([NP, ...named('web')])), /"port":"80"/, 'port 80 is gone');

  // a valid CNP, then an invalid version of it: the valid one stays, the field is named
  await kubectlOk(c, ['apply', '-f', '-'], cnp('db', '10.1.0.0/16'));
  await until('the CNP rule', () => repo.get([CNP, ...named('db')]).length === 1);
  await kubectlOk(c, ['apply', '-f', '-'], cnp('db', '10.1.0.0/99'));
  const ev = await until('the InvalidPolicy event', async () => {
    const list = await c.kubectlJson<{ items: { reason: string; message: string; involvedObject: { kind: string; name: string } }[] }>(
      ['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.name=db,reason=InvalidPolicy', '-o', 'json']);
    return list.items[0];
  });
  t.equal(ev.involvedObject.kind, 'CiliumNetworkPolicy', 'the Event is on the CNP');
  t.match(ev.message, /\/spec\/ingress\/0\/fromCIDR\/0/, 'the Event names the field');
  const h = await until('the job health naming the object', () =>
    findNode(a.h.get(HealthTreeToken).snapshot(), (n) => n.level === 'degraded' && /invalid CiliumNetworkPolicy/.test(n.message ?? '')));
  t.match(h.message, /default\/db \(at \/spec\/ingress\/0\/fromCIDR\/0/, 'health names the object and the field');
  const kept = repo.get([CNP, ...named('db')]);
  t.equal(kept.length, 1, 'the previous valid version stays applied');
  t.match(JSON.stringify(kept[0]), /10\.1\.0\.0\/16/, 'it is the previous version');
  await kubectlOk(c, ['apply', '-f', '-'], cnp('db', '10.2.0.0/16'));
  await until('the fixed CNP', () => JSON.stringify(repo.get([CNP, ...named('db')])).includes('10.2.0.0/16'));
  await until('health ok again', () => !findNode(a.h.get(HealthTreeToken).snapshot(), (n) => /invalid CiliumNetworkPolicy/.test(n.message ?? '')));

  // a clusterwide policy: no namespace label; delete removes it
  const ccnp = JSON.parse(cnp('cw', '10.5.0.0/16')) as { kind: string; metadata: Record<string, string> };
  ccnp.kind = 'CiliumClusterwideNetworkPolicy';
  delete ccnp.metadata.namespace;
  const CCNP = ['k8s:io.cilium.k8s.policy.derived-from=CiliumClusterwideNetworkPolicy', 'k8s:io.cilium.k8s.policy.name=cw'];
  await kubectlOk(c, ['apply', '-f', '-'], JSON.stringify(ccnp));
  const cw = await until('the CCNP rule', () => { const r = repo.get(CCNP); return r.length ? r : undefined; });
  t.notOk(cw[0].labels?.some((l) => l.startsWith('k8s:io.cilium.k8s.policy.namespace=')), 'a CCNP rule has no namespace label');
  await kubectlOk(c, ['delete', 'ciliumclusterwidenetworkpolicy', 'cw']);
  await until('the CCNP rule gone', () => repo.get(CCNP).length === 0);

  // delete: gone
  await kubectlOk(c, ['delete', 'networkpolicy', 'web', '-n', 'default']);
  await until('the NetworkPolicy rule gone', () => repo.get([NP, ...named('web')]).length === 0);
  t.equal(repo.get([CNP, ...named('db')]).length, 1, 'the other object\'s rules stay');

  // deleted while the agent was stopped: gone after the next start's sync
  await kubectlOk(c, ['apply', '-f', '-'], netpol('gone-while-down', 443));
  await until('the second NetworkPolicy', () => repo.get([NP, ...named('gone-while-down')]).length === 1);
  const stoppedAt = repo.revision;
  await a.h.hive.stop();
  await kubectlOk(c, ['delete', 'networkpolicy', 'gone-while-down', '-n', 'default']);
  const again = await agent(t, c, stateDir);
  await until('the CNP seen again after restart', () => again.repo.get([CNP, ...named('db')]).length === 1);
  await until('the policy deleted while down removed at sync', () => again.repo.get([NP, ...named('gone-while-down')]).length === 0);
  t.equal(again.repo.get([CNP, ...named('db')]).length, 1, 'what still exists stays');
  await until('the CNP job to have handled the replay', () =>
    findNode(again.a.h.get(HealthTreeToken).snapshot(), (n) => n.message === 'every CiliumNetworkPolicy applied'));
  t.equal(again.repo.revision, stoppedAt + 1, 'one change after restart (the prune): the unchanged CNP was not re-imported');
});
