// Pod endpoint labels from Kubernetes against a real apiserver: a pod endpoint created (as the CNI
// ADD creates it) gets its Pod's and Namespace's labels as Cilium derives them; an ADD for a pod
// not seen yet waits for it and fails after --k8s-pod-wait-timeout with a clear error; `kubectl
// label pod` and `kubectl label namespace` change the endpoint's labels and identity without a new ADD.
import t from 'tap';
import { podRequest, startAgent } from '../api-integration/agent.js';
import { k8sSkip, startCluster } from './cluster.js';
import { kubectlOk, until } from './util.js';

const skip = k8sSkip();

function pod(name: string, ns: string, nodeName: string, labels: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels },
    spec: { nodeName, containers: [{ name: 'c', image: 'localhost/none:never' }] },
  });
}

t.test('pod endpoints get their labels from Kubernetes and follow them', { skip }, async (t) => {
  const c = await startCluster(t);
  await kubectlOk(c, ['create', 'namespace', 'shop']);
  await kubectlOk(c, ['label', 'namespace', 'shop', 'team=a']);
  await kubectlOk(c, ['create', '-f', '-'], pod('web', 'shop', 'node-a', { app: 'web', 'pod-template-hash': 'h1', 'io.cilium.k8s.policy.cluster': 'forged' }));
  const a = await startAgent(t, {
    'k8s-kubeconfig-path': c.kubeconfig, 'k8s-node-name': 'node-a', 'k8s-pod-wait-timeout': '3s', 'cluster-name': 'c1',
  });
  // An ADD waits for the cache-sync gate first (within the same 3 s): let the agent register the
  // CRDs and sync every resource, so the waits below are the pod's alone.
  await until('the caches to sync', async () => (await a.client.status()).kubernetes?.state === 'Ok');

  const created = await a.client.createEndpoint(1, podRequest(1, { ipv4: '10.210.0.10' }, { 'k8s-pod-name': 'web', 'k8s-namespace': 'shop' }));
  const derived = created.status?.labels?.derived ?? [];
  t.same(derived, [
    'k8s:app=web',
    'k8s:io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name=shop',
    'k8s:io.cilium.k8s.namespace.labels.team=a',
    'k8s:io.cilium.k8s.policy.cluster=c1',
    'k8s:io.cilium.k8s.policy.serviceaccount=default',
    'k8s:io.kubernetes.pod.namespace=shop',
  ], 'the pod\'s and namespace\'s labels, Cilium\'s own not forgeable, pod-template-hash filtered');
  const firstIdentity = created.status?.identity?.id;
  t.ok(firstIdentity && firstIdentity >= 256, `an identity for them (${firstIdentity})`);

  // A pod this node does not have: the ADD waits, then fails naming why.
  const began = Date.now();
  const ghost = await a.client.createEndpoint(2, podRequest(2, { ipv4: '10.210.0.11' }, { 'k8s-pod-name': 'ghost', 'k8s-namespace': 'shop' })).then(() => undefined, (e: Error) => e);
  t.match(ghost?.message, /labels of pod shop\/ghost: kubernetes: pod shop\/ghost not seen from the apiserver within 3000 ms: check that the pod is scheduled to this node \(--k8s-node-name=node-a\)/);
  t.ok(Date.now() - began >= 2900, 'after the wait');
  t.notOk((await a.client.listEndpoints()).some((e) => e.id === 2), 'no endpoint is left behind');
  await kubectlOk(c, ['create', '-f', '-'], pod('elsewhere', 'shop', 'node-b', { app: 'web' }));
  const other = await a.client.createEndpoint(3, podRequest(3, { ipv4: '10.210.0.12' }, { 'k8s-pod-name': 'elsewhere', 'k8s-namespace': 'shop' })).then(() => undefined, (e: Error) => e);
  t.match(other?.message, /pod shop\/elsewhere not seen/, 'another node\'s pod is not this node\'s endpoint');

  // An ADD that comes before the watch brought the pod waits for it.
  const pending = a.client.createEndpoint(4, podRequest(4, { ipv4: '10.210.0.13' }, { 'k8s-pod-name': 'late', 'k8s-namespace': 'shop' }));
  await kubectlOk(c, ['create', '-f', '-'], pod('late', 'shop', 'node-a', { app: 'late' }));
  t.ok((await pending).status?.labels?.derived?.includes('k8s:app=late'), 'the ADD for a pod created meanwhile succeeds with its labels');

  // kubectl label pod: new labels, new identity, no new ADD.
  await kubectlOk(c, ['label', 'pod', 'web', '-n', 'shop', '--overwrite', 'app=shop']);
  const relabelled = await until('the pod label to reach the endpoint', async () => {
    const ep = await a.client.getEndpoint(1);
    return ep.status?.labels?.derived?.includes('k8s:app=shop') && ep.status.identity?.labels?.includes('k8s:app=shop') ? ep : undefined;
  });
  t.not(relabelled.status?.identity?.id, firstIdentity, 'the identity changed with the label');
  t.notOk(relabelled.status?.labels?.derived?.includes('k8s:app=web'), 'the old label is gone');

  // kubectl label namespace: every pod endpoint of the namespace follows.
  await kubectlOk(c, ['label', 'namespace', 'shop', '--overwrite', 'team=b']);
  for (const id of [1, 4]) {
    await until(`endpoint ${id} to get the namespace label`, async () =>
      (await a.client.getEndpoint(id)).status?.identity?.labels?.includes('k8s:io.cilium.k8s.namespace.labels.team=b'));
  }
  t.pass('a namespace label change reaches every endpoint of the namespace');
});
