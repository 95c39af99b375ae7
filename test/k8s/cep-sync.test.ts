// CiliumEndpoint sync against a real apiserver, as root: the agent's hive (memory datapath, the CNI
// server on the real netlink addon) runs with its ServiceAccount's token bound by deploy/rbac.yaml
// (never admin: a forbidden call fails). A CNI ADD through the real shim into a network namespace
// of this test answers once the pod's CiliumEndpoint exists: read back with kubectl (endpoint id,
// identity id and labels, address, node, enforcement, state, owner reference to the Pod's uid);
// `kubectl label pod` moves its identity; DEL deletes it. An ADD whose CiliumEndpoint cannot be
// written (one of another node holds the name) fails naming why and leaves nothing. After a
// restart, the restored endpoint's CiliumEndpoint is adopted and rewritten, a stale one of this
// node (no endpoint) is removed, and another node's is left alone.
import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniServerToken, hostIfName } from '../../src/cells/cni-server/index.js';
import { detectNodeIP } from '../../src/cells/cluster/index.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { startAgent, type TestAgent } from '../api-integration/agent.js';
import { buildShim, cni, netns } from '../root-e2e/agent.js';
import { k8sSkip, startCluster, type Cluster } from './cluster.js';
import { agentKubeconfig, kubectlOk, until } from './util.js';

const skip = k8sSkip({ root: true });
const NODE = 'node-a';
const POOL = '10.212.0.0/24';

interface Cep {
  metadata: { name: string; uid: string; labels?: Record<string, string>; ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[] };
  status: {
    id: number; state: string; identity?: { id: number; labels: string[] };
    networking: { addressing: { ipv4?: string }[]; node: string };
    policy: { ingress: { enforcing: boolean; state: string }; egress: { enforcing: boolean } };
    health?: { overallHealth?: string };
    'external-identifiers'?: Record<string, string>;
  };
}

t.before(() => {
  if (!skip) buildShim();
});

function pod(name: string, ns: string, labels: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'localhost/none:never' }] },
  });
}

async function cep(c: Cluster, ns: string, name: string): Promise<Cep | undefined> {
  const r = await c.kubectl(['get', 'ciliumendpoint', '-n', ns, name, '-o', 'json']);
  if (r.code !== 0) {
    if (/NotFound/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get cep ${ns}/${name}: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as Cep;
}

async function agent(t: Test, kubeconfig: string, stateDir: string, extra: Record<string, unknown> = {}): Promise<TestAgent> {
  const a = await startAgent(t, {
    'k8s-kubeconfig-path': kubeconfig, 'k8s-node-name': NODE, 'state-dir': stateDir, 'ipv4-range': POOL, 'ipv6-range': '',
    'k8s-pod-wait-timeout': '10s', ...extra,
  });
  await a.h.get(CniServerToken).whenReady();
  return a;
}

t.test('the CiliumEndpoint of a pod: written before the ADD answers, kept current, deleted at DEL, stale ones removed after a restart', { skip }, async (t) => {
  const c = await startCluster(t);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cep-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = await agentKubeconfig(c, dir);
  const stateDir = join(dir, 'state');
  await kubectlOk(c, ['create', 'namespace', 'shop']);
  await kubectlOk(c, ['create', '-f', '-'], pod('web', 'shop', { app: 'web' }));
  const uid = (await kubectlOk(c, ['get', 'pod', 'web', '-n', 'shop', '-o', 'jsonpath={.metadata.uid}'])).trim();
  let a = await agent(t, kubeconfig, stateDir, { 'k8s-cep-create-timeout': '30s' });
  const conf = { cniVersion: '1.0.0', name: 'cellium', type: 'cellium-cni', 'socket-path': a.socketPath };

  // ADD: the answer comes once the CiliumEndpoint exists
  const web = netns(t, 'cep-web');
  const add = await cni('ADD', { containerId: 'cep-web-1', netns: web.path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web;K8S_POD_UID=${uid}` }, conf);
  t.equal(add.code, 0, `ADD: ${add.stdout}${add.stderr}`);
  const ip = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
  const got = await cep(c, 'shop', 'web');
  t.ok(got, 'the CiliumEndpoint exists when the ADD has answered');
  const ep = a.h.get(EndpointManagerToken).lookup('pod-name:shop/web')!;
  t.match(got!.status, {
    id: ep.id, state: 'ready', identity: { id: ep.identity },
    networking: { addressing: [{ ipv4: ip }], node: detectNodeIP('') },
    policy: { ingress: { enforcing: false, state: 'non-enforcing' }, egress: { enforcing: false } },
    'external-identifiers': { 'container-id': 'cep-web-1', 'k8s-namespace': 'shop', 'k8s-pod-name': 'web' },
  }, 'endpoint id, identity, address, node, enforcement and state, as Cilium names them');
  t.ok(got!.status.identity?.labels.includes('k8s:app=web'), 'the identity labels');
  t.same(got!.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid }], 'owner-referenced to the Pod (its uid)');
  t.same(got!.metadata.labels, { app: 'web' }, 'the pod\'s labels mirrored');
  t.match(a.h.get(EndpointManagerToken).lookup('pod-name:shop/web')!.toModel().status.controllers, [{ name: `endpoint-${ep.id}-sync-to-k8s-ciliumendpoint` }], 'its controller is among the endpoint\'s');

  // kept current: a label change gives a new identity, written to the CiliumEndpoint
  await kubectlOk(c, ['label', 'pod', 'web', '-n', 'shop', '--overwrite', 'app=shop']);
  const moved = await until('the new identity in the CiliumEndpoint', async () => {
    const now = await cep(c, 'shop', 'web');
    return now?.status.identity?.labels.includes('k8s:app=shop') ? now : undefined;
  }, 20_000);
  t.not(moved.status.identity?.id, got!.status.identity?.id, 'the identity id changed');
  t.equal(moved.status.identity?.id, a.h.get(EndpointManagerToken).lookup('pod-name:shop/web')!.identity, 'it is the endpoint\'s');
  t.equal(moved.metadata.uid, got!.metadata.uid, 'the same object, updated');

  // an ADD whose CiliumEndpoint cannot be written: another node's holds the name
  await kubectlOk(c, ['create', '-f', '-'], pod('db', 'shop', { app: 'db' }));
  const dbUid = (await kubectlOk(c, ['get', 'pod', 'db', '-n', 'shop', '-o', 'jsonpath={.metadata.uid}'])).trim();
  await kubectlOk(c, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'cilium.io/v2', kind: 'CiliumEndpoint', metadata: { name: 'db', namespace: 'shop' },
    status: { id: 7, networking: { addressing: [{ ipv4: '10.99.0.7' }], node: '192.0.2.99' } },
  }));
  await a.h.hive.stop();
  a = await agent(t, kubeconfig, stateDir, { 'k8s-cep-create-timeout': '2s' });
  const db = netns(t, 'cep-db');
  const failed = await cni('ADD', { containerId: 'cep-db-1', netns: db.path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=db;K8S_POD_UID=${dbUid}` }, { ...conf, 'socket-path': a.socketPath });
  t.not(failed.code, 0, 'the ADD fails');
  t.match(failed.stdout, /CiliumEndpoint shop\/db not written within 2000 ms: kubernetes: CiliumEndpoint shop\/db exists and is not this endpoint's \(owned by pod uid none on node 192\.0\.2\.99\)/, 'naming why');
  t.notOk(a.h.get(EndpointManagerToken).lookup('pod-name:shop/db'), 'no endpoint is left');
  t.notOk(existsSync(`/sys/class/net/${hostIfName('cep-db-1', 'eth0')}`), 'no host interface is left');
  t.equal((await cep(c, 'shop', 'db'))?.status.networking.node, '192.0.2.99', 'the other node\'s CiliumEndpoint is untouched');

  // after a restart: the restored endpoint's CiliumEndpoint is adopted and rewritten; a stale one of this node is removed
  await a.h.hive.stop();
  await kubectlOk(c, ['patch', 'ciliumendpoint', 'web', '-n', 'shop', '--type=merge', '-p', '{"status":{"state":"invalid"}}']);
  await kubectlOk(c, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'cilium.io/v2', kind: 'CiliumEndpoint', metadata: { name: 'ghost', namespace: 'shop' },
    status: { id: 9, networking: { addressing: [{ ipv4: '10.212.0.99' }], node: detectNodeIP('') } },
  }));
  a = await agent(t, kubeconfig, stateDir);
  await until('the stale CiliumEndpoint removed', async () => !(await cep(c, 'shop', 'ghost')), 30_000);
  const restored = await until('the restored endpoint\'s CiliumEndpoint rewritten', async () => {
    const now = await cep(c, 'shop', 'web');
    return now?.status.state === 'ready' ? now : undefined;
  }, 30_000);
  t.equal(restored.metadata.uid, got!.metadata.uid, 'the same object (adopted, not recreated)');
  t.equal((await cep(c, 'shop', 'db'))?.status.networking.node, '192.0.2.99', 'another node\'s CiliumEndpoint is left alone');

  // DEL: deleted with the endpoint
  const del = await cni('DEL', { containerId: 'cep-web-1', netns: web.path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web;K8S_POD_UID=${uid}` }, { ...conf, 'socket-path': a.socketPath });
  t.equal(del.code, 0, `DEL: ${del.stdout}${del.stderr}`);
  await until('the CiliumEndpoint deleted', async () => !(await cep(c, 'shop', 'web')), 20_000);
  t.pass('deleted at DEL');
});
