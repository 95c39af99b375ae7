// The whole agent in Kubernetes mode (memory datapath, its ServiceAccount's token) keeps its pod
// endpoints' identities as CiliumIdentities (the default --identity-allocation-mode=crd): a pod
// endpoint's identity is the CiliumIdentity of its number, its CiliumEndpoint names it, and the
// GC leaves it alone. The apiserver killed: a pod endpoint with a label set no identity has yet
// fails after --identity-allocation-timeout naming the apiserver and leaves nothing; the existing
// endpoint keeps its identity; once the apiserver is back the same request succeeds.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { podRequest, startAgent } from '../api-integration/agent.js';
import type { CiliumIdentity } from '../../src/cells/k8s-identity/index.js';
import { k8sSkip, startCluster } from './cluster.js';
import { agentKubeconfig, kubectlOk, until } from './util.js';

const skip = k8sSkip();

function pod(name: string, labels: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', labels },
    spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'localhost/none:never' }] },
  });
}

t.test('the agent\'s pod endpoints have CiliumIdentities; without the apiserver a new one fails closed', { skip }, async (t) => {
  const c = await startCluster(t);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-crdid-agent-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = await agentKubeconfig(c, dir);
  await kubectlOk(c, ['create', '-f', '-'], pod('web', { app: 'web' }));
  await kubectlOk(c, ['create', '-f', '-'], pod('db', { app: 'db' }));
  // the default time limit (10 s): the apiserver's first write of a custom resource after its CRD
  // was registered (by this agent at start) takes about 2 s, the next ones about 10 ms
  const a = await startAgent(t, {
    'k8s-kubeconfig-path': kubeconfig, 'k8s-node-name': 'node-a', 'k8s-pod-wait-timeout': '10s', 'identity-allocation-timeout': '10s',
    'identity-gc-interval': '1s', 'identity-heartbeat-timeout': '2s',
  });
  await until('the caches to sync', async () => (await a.client.status()).kubernetes?.state === 'Ok');
  const web = await a.client.createEndpoint(1, podRequest(1, { ipv4: '10.210.0.10' }, { 'k8s-pod-name': 'web' }));
  const id = web.status?.identity?.id;
  t.ok(id && id >= 256, `an identity (${id})`);
  const obj = await c.kubectlJson<CiliumIdentity>(['get', 'ciliumidentity', String(id)]);
  t.equal(obj['security-labels']?.['k8s:app'], 'web', 'its CiliumIdentity holds its labels');
  t.equal(obj['security-labels']?.['k8s:io.kubernetes.pod.namespace'], 'default');
  const cep = await until('the CiliumEndpoint', async () => {
    const r = await c.kubectl(['get', 'cep', 'web', '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as { status?: { identity?: { id?: number } } }) : undefined;
  });
  t.equal(cep.status?.identity?.id, id, 'the CiliumEndpoint names it');
  await new Promise((r) => setTimeout(r, 3500)); // past the GC's grace period
  t.equal((await c.kubectl(['get', 'ciliumidentity', String(id)])).code, 0, 'named by a CiliumEndpoint: not collected');

  const restart = await c.killApiserver();
  const began = Date.now();
  const err = await a.client.createEndpoint(2, podRequest(2, { ipv4: '10.210.0.11' }, { 'k8s-pod-name': 'db' })).then(() => undefined, (e: Error) => e);
  t.ok(err, 'a pod endpoint with a new label set fails');
  t.match(err?.message, /no identity for labels ".*k8s:app=db.*" within 10000 ms \(--identity-allocation-timeout\): the apiserver did not answer/, 'naming the identity time limit and the apiserver');
  t.ok(Date.now() - began >= 9900, 'after the time limit');
  t.same((await a.client.listEndpoints()).map((e) => e.id), [1], 'nothing of it is left');
  t.equal((await a.client.listEndpoints())[0]?.status?.identity?.id, id, 'the existing endpoint keeps its identity');
  await restart();
  const db = await until('the same request to succeed once the apiserver is back', () => a.client.createEndpoint(2, podRequest(2, { ipv4: '10.210.0.11' }, { 'k8s-pod-name': 'db' })).then((e) => e, () => undefined), 60_000);
  const dbId = db.status?.identity?.id;
  t.ok(dbId && dbId !== id, `a new identity (${dbId})`);
  t.equal((await c.kubectlJson<CiliumIdentity>(['get', 'ciliumidentity', String(dbId)]))['security-labels']?.['k8s:app'], 'db');
});
