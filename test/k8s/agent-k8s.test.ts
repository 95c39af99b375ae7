// The agent in Kubernetes mode against a real apiserver (scripts/k8s.sh up): without Kubernetes
// nothing is loaded and the status says Disabled; with a kubeconfig every resource syncs and the
// status shows the version; Cilium's CRDs missing leave their resources degraded and retrying (the
// agent runs on) until the CRDs are installed; an apiserver unreachable at start leaves the agent
// up and degraded with the error until it answers.
import t from 'tap';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { HealthTreeToken, type HealthNode } from '../../src/hive/health.js';
import { AGENT_RESOURCES, k8sLibLoaded, LocalPodsToken } from '../../src/cells/k8s/index.js';
import { renderStatus } from '../../src/cli/commands/status.js';
import { startAgent, type TestAgent } from '../api-integration/agent.js';
import { k8sSkip, startCluster } from './cluster.js';
import { kubectlOk, until } from './util.js';

const skip = k8sSkip();

function node(tree: HealthNode, path: string[]): HealthNode | undefined {
  let n: HealthNode | undefined = tree;
  for (const p of path) n = n?.children.find((c) => c.name === p);
  return n;
}

/** A minimal CRD of cilium.io/v2 (the real ones come from deploy/). */
function crd(kind: string, plural: string, scope: 'Namespaced' | 'Cluster'): string {
  return JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.cilium.io` },
    spec: {
      group: 'cilium.io', scope, names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [{ name: 'v2', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
}

const fast = { 'k8s-node-name': 'node-a' };

t.test('without Kubernetes nothing is loaded or started', async (t) => {
  const a = await startAgent(t);
  t.match((await a.client.status()).kubernetes, { state: 'Disabled', msg: /no --k8s-kubeconfig-path/ });
  t.equal(a.h.get(LocalPodsToken), undefined, 'no Pods resource');
  t.equal(k8sLibLoaded(), false, '@kubernetes/client-node was not imported');
});

t.test('with a kubeconfig: every resource syncs; missing CRDs degrade until installed', { skip }, async (t) => {
  const c = await startCluster(t);
  // --skip-crd-creation: the CRDs are the administrator's here, and not installed yet
  const a: TestAgent = await startAgent(t, { 'k8s-kubeconfig-path': c.kubeconfig, 'skip-crd-creation': true, ...fast });
  t.ok(k8sLibLoaded(), 'the library is loaded in Kubernetes mode');
  const cnp = ['kubernetes', 'k8s-resources', 'ciliumnetworkpolicies'];
  const tree = a.h.get(HealthTreeToken);
  await until('the CNP resource to report the missing CRD', () => node(tree.snapshot(), cnp)?.level === 'degraded');
  t.match(node(tree.snapshot(), cnp)?.message, /retrying: kubernetes: GET \/apis\/cilium.io\/v2\/ciliumnetworkpolicies: 404: the apiserver does not serve this API; install its CustomResourceDefinition/, 'the CNP resource names the 404 and the fix');
  const before = await until('the version and the core resources', async () => {
    const k = (await a.client.status()).kubernetes;
    return k?.msg?.includes(`6/${AGENT_RESOURCES.length} resources synced`) && /^v1\.\d+/.test(k.msg) ? k : undefined;
  });
  t.equal(before.state, 'Warning');
  t.match(before.msg, /not synced: ciliumnetworkpolicies, ciliumclusterwidenetworkpolicies, ciliumendpoints; last error: (ciliumclusterwidenetworkpolicies|ciliumnetworkpolicies|ciliumendpoints): .*404/, 'the status names what is not synced and why');
  t.ok((await a.client.status()).cilium?.msg?.includes('k8s-resources/ciliumnetworkpolicies'), 'the agent state names the degraded resource');

  await kubectlOk(c, ['apply', '-f', '-'], crd('CiliumNetworkPolicy', 'ciliumnetworkpolicies', 'Namespaced'));
  await kubectlOk(c, ['apply', '-f', '-'], crd('CiliumClusterwideNetworkPolicy', 'ciliumclusterwidenetworkpolicies', 'Cluster'));
  await kubectlOk(c, ['apply', '-f', '-'], crd('CiliumEndpoint', 'ciliumendpoints', 'Namespaced'));
  const after = await until('every resource synced', async () => {
    const k = (await a.client.status()).kubernetes;
    return k?.state === 'Ok' ? k : undefined;
  });
  t.match(after.msg, new RegExp(`^v1\\.\\d+\\S* at ${c.server.replace(/[.]/g, '\\.')}; 9/9 resources synced$`), 'Ok: the version, the server, all synced');
  t.equal(after['k8s-api-versions']?.length, AGENT_RESOURCES.length);
  t.equal(node(tree.snapshot(), cnp)?.message, 'synced');
  t.match(renderStatus(await a.client.status(), false), /Kubernetes:\s+Ok\s+v1\.\d+.*9\/9 resources synced/, 'cellium status shows it');

  // The Pods resource holds only this node's pods.
  const pods = a.h.get(LocalPodsToken)!;
  const pod = (name: string, nodeName: string): string => JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
    spec: { nodeName, containers: [{ name: 'c', image: 'localhost/none:never' }] },
  });
  await kubectlOk(c, ['create', '-f', '-'], pod('mine', 'node-a'));
  await kubectlOk(c, ['create', '-f', '-'], pod('other', 'node-b'));
  const store = await pods.store();
  await until('this node\'s pod', () => store.get('default/mine'));
  await kubectlOk(c, ['label', 'pod', 'other', '-n', 'default', 'x=1']);
  await until('the label seen on a later change of mine', async () => {
    await kubectlOk(c, ['label', 'pod', 'mine', '-n', 'default', '--overwrite', `y=${Date.now()}`]);
    return store.get('default/mine')?.metadata?.labels?.y;
  });
  t.notOk(store.get('default/other'), 'another node\'s pod is not watched');
});

t.test('the agent registers the shipped Cilium CRDs at start, and its CNP/CCNP resources sync on them', { skip }, async (t) => {
  const c = await startCluster(t);
  const a = await startAgent(t, { 'k8s-kubeconfig-path': c.kubeconfig, ...fast });
  const crds = ['kubernetes', 'k8s-resources', 'crds'];
  const tree = a.h.get(HealthTreeToken);
  await until('the CRDs registered', () => node(tree.snapshot(), crds)?.level === 'ok' && node(tree.snapshot(), crds)?.message?.startsWith('registered:'));
  t.match(node(tree.snapshot(), crds)?.message, /^registered: .*ciliumnetworkpolicies\.cilium\.io created/, 'the health node says what it did');
  for (const plural of ['ciliumnetworkpolicies', 'ciliumclusterwidenetworkpolicies', 'ciliumidentities', 'ciliumendpoints', 'ciliumnodes']) {
    const got = await kubectlOk(c, ['get', 'crd', `${plural}.cilium.io`, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}']);
    t.equal(got.trim(), 'True', `${plural}.cilium.io is Established`);
  }
  const k = await until('every resource synced', async () => {
    const s = (await a.client.status()).kubernetes;
    return s?.state === 'Ok' ? s : undefined;
  }, 60_000);
  t.match(k.msg, /9\/9 resources synced$/, 'the CNP and CCNP resources synced on the registered CRDs');
});

/** A TCP forwarder on 127.0.0.1:port to `target` (started later: the apiserver "comes up"). */
function forwarder(target: URL): { start(port: number): Promise<void>; stop(): Promise<void> } {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  return {
    start: (port) => new Promise((resolve, reject) => {
      server = createServer((s) => {
        const up = connect(Number(target.port), target.hostname);
        sockets.add(s).add(up);
        s.pipe(up).pipe(s);
        const end = (): void => { s.destroy(); up.destroy(); };
        s.on('error', end).on('close', end);
        up.on('error', end).on('close', end);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    }),
    stop: () => new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
    }),
  };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

t.test('apiserver unreachable at start: the agent starts degraded, then syncs', { skip }, async (t) => {
  const c = await startCluster(t);
  await kubectlOk(c, ['apply', '-f', '-'], crd('CiliumNetworkPolicy', 'ciliumnetworkpolicies', 'Namespaced'));
  await kubectlOk(c, ['apply', '-f', '-'], crd('CiliumClusterwideNetworkPolicy', 'ciliumclusterwidenetworkpolicies', 'Cluster'));
  const port = await freePort();
  const fwd = forwarder(new URL(c.server));
  t.teardown(() => fwd.stop());
  const a = await startAgent(t, { 'k8s-kubeconfig-path': c.kubeconfig, 'k8s-api-server': `https://127.0.0.1:${port}`, ...fast });
  const down = await until('the version error', async () => {
    const k = (await a.client.status()).kubernetes;
    return k?.msg?.includes('last error: version:') ? k : undefined;
  });
  t.equal(down.state, 'Warning', 'degraded, not down');
  t.match(down.msg, /^version unknown at https:\/\/127\.0\.0\.1:\d+; 0\/9 resources synced; not synced: pods, .*; last error: version: .*ECONNREFUSED/, 'the status names the error');
  t.equal((await a.client.status()).cilium?.state, 'Warning', 'the agent state is Warning');
  t.ok(node(a.h.get(HealthTreeToken).snapshot(), ['kubernetes', 'k8s-resources', 'apiserver'])?.level === 'degraded', 'the health tree says the apiserver is unreachable');

  await fwd.start(port);
  const up = await until('every resource synced', async () => {
    const k = (await a.client.status()).kubernetes;
    return k?.state === 'Ok' ? k : undefined;
  });
  t.match(up.msg, /^v1\.\d+\S* at https:\/\/127\.0\.0\.1:\d+; 9\/9 resources synced$/, 'Ok once the apiserver answers');
});
