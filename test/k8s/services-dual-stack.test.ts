// A dual-stack Service from the apiserver on real packets (root, BPF datapath, the built agent with
// --ipv4-range and --ipv6-range and its ServiceAccount's token, the harness's dual-stack service
// range). A Deployment's pods with an IPv4 and an IPv6 address (status patched, as a kubelet
// would) behind a `RequireDualStack` Service: the apiserver gives it a ClusterIP of each family,
// kube-controller-manager's EndpointSlice controller makes one slice per address type, and the agent
// programs both frontends with the backends of their own family; a client pod reaches the Service
// over IPv4 and over IPv6; the IPv6 slice's pods change (one deleted): the IPv6 frontend follows;
// the Service deleted: both frontends leave the kernel maps.
import t from 'tap';
import {
  Cleanup, agentProcess, agentProcessSkip, allocatePod, endpointRequest, tempDir, until as poll, type Pod,
} from '../root-datapath-agent/fixtures.js';
import { k8sSkip, startCluster } from './cluster.js';
import { connect, hits, kernelLB, listen } from './lb-traffic.js';
import { agentKubeconfig, kubectlOk, nodeWithHeartbeat, until } from './util.js';

const skip = agentProcessSkip() || k8sSkip({ root: true });
const NODE = 'node-ds';
const POOL = '10.232.0.0/24';
const POOL6 = 'fd00:232::/120';
const VIP4 = '10.96.78.10';
/** In the harness's IPv6 service range (scripts/k8s.sh SERVICE_CIDR6). */
const VIP6 = 'fd00:10:96::7810';

/** The backends of the frontend whose service string starts with `prefix`, or undefined without one. */
async function backendsOf(socketPath: string, root: string, prefix: string): Promise<string[] | undefined> {
  const e = (await kernelLB(socketPath, root)).find((x) => x.service.startsWith(prefix));
  return e?.backends.map((b) => b.backend.replace(/\/TCP.*$/, '')).sort();
}

t.test('a dual-stack Service: a ClusterIP of each family, each with its family\'s backends, reached over both', { skip }, async (t) => {
  const c = new Cleanup(t);
  const cluster = await startCluster(c);
  const dir = tempDir(c, 'k8s-services-ds');
  const kubeconfig = await agentKubeconfig(cluster, dir);
  t.teardown(await nodeWithHeartbeat(cluster, NODE));
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'ds-client', namespace: 'default', labels: { app: 'ds-client' } }, spec: { nodeName: NODE, containers: [{ name: 'c', image: 'localhost/none:never' }] } }));

  const ap = agentProcess(c, 'k8s-services-ds', POOL, [`--ipv6-range=${POOL6}`, `--k8s-kubeconfig-path=${kubeconfig}`, `--k8s-node-name=${NODE}`]);
  const agent = ap.start();
  t.ok(await ap.up(agent), 'the agent serves its API', { log: agent.log().slice(-3000) });
  const diag = async (): Promise<unknown> => ({ kernel: await kernelLB(ap.socketPath, ap.root).catch((e: Error) => e.message), log: agent.log().slice(-3000) });
  const client = await allocatePod(c, ap.client, 'ds-client', { dualStack: true });
  await ap.client.createEndpoint(0, endpointRequest(client, []));

  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ds', namespace: 'default' },
    spec: {
      replicas: 2, selector: { matchLabels: { app: 'ds' } },
      template: {
        metadata: { labels: { app: 'ds' } },
        spec: { nodeName: NODE, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'localhost/none:never', ports: [{ name: 'http', containerPort: 8080 }] }] },
      },
    },
  }));
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'ds', namespace: 'default' },
    spec: { ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4', 'IPv6'], clusterIP: VIP4, clusterIPs: [VIP4, VIP6], selector: { app: 'ds' }, ports: [{ name: 'web', port: 80, targetPort: 'http' }] },
  }));
  const svc = await cluster.kubectlJson<{ spec: { clusterIPs: string[]; ipFamilies: string[] } }>(['get', 'service', 'ds', '-n', 'default']);
  t.same(svc.spec.ipFamilies, ['IPv4', 'IPv6'], 'the apiserver made the Service dual-stack');
  t.same(svc.spec.clusterIPs, [VIP4, VIP6], 'a ClusterIP of each family');

  const names = await until('the Deployment\'s two pods', async () => {
    const l = await cluster.kubectlJson<{ items: { metadata: { name: string } }[] }>(['get', 'pods', '-n', 'default', '-l', 'app=ds']);
    return l.items.length === 2 ? l.items.map((p) => p.metadata.name) : undefined;
  }, 60_000);
  const pods: Pod[] = [];
  for (const name of names) {
    const pod = await allocatePod(c, ap.client, name, { dualStack: true });
    await ap.client.createEndpoint(0, endpointRequest(pod, []));
    await kubectlOk(cluster, ['patch', 'pod', name, '-n', 'default', '--subresource=status', '--type=merge', '-p', JSON.stringify({
      status: { phase: 'Running', podIP: pod.ip, podIPs: [{ ip: pod.ip }, { ip: pod.ipv6 }], conditions: [{ type: 'Ready', status: 'True' }, { type: 'ContainersReady', status: 'True' }] },
    })]);
    pods.push(pod);
  }
  const slices = await until('an EndpointSlice of each address type', async () => {
    const l = await cluster.kubectlJson<{ items: { addressType: string; endpoints?: unknown[] }[] }>(['get', 'endpointslices', '-n', 'default', '-l', 'kubernetes.io/service-name=ds']);
    const types = l.items.filter((s) => (s.endpoints ?? []).length === 2).map((s) => s.addressType).sort();
    return types.join() === 'IPv4,IPv6' ? types : undefined;
  }, 60_000);
  t.same(slices, ['IPv4', 'IPv6'], 'kube-controller-manager made an IPv4 and an IPv6 slice');

  const want4 = pods.map((p) => `${p.ip}:8080`).sort().join();
  const want6 = pods.map((p) => `[${p.ipv6}]:8080`).sort().join();
  t.ok(await poll(async () => (await backendsOf(ap.socketPath, ap.root, `${VIP4}:80`))?.join() === want4, 30_000), `${VIP4}:80 -> the pods' IPv4 addresses in the kernel maps`, { diag: await diag() });
  t.ok(await poll(async () => (await backendsOf(ap.socketPath, ap.root, `[${VIP6}]:80`))?.join() === want6, 30_000), `[${VIP6}]:80 -> the pods' IPv6 addresses in the kernel maps`, { diag: await diag() });

  const ids4 = await Promise.all(pods.map((p) => listen(p, 8080)));
  const ids6 = await Promise.all(pods.map((p) => listen(p, 8080, { addr: p.ipv6! })));
  let ok4 = 0;
  let ok6 = 0;
  for (let i = 0; i < 20; i++) {
    if (await connect(client, VIP4, 80)) ok4++;
    if (await connect(client, VIP6, 80)) ok6++;
  }
  t.equal(ok4, 20, 'the client reaches the IPv4 ClusterIP');
  t.equal(ok6, 20, 'the client reaches the IPv6 ClusterIP');
  await poll(() => pods.reduce((a, p, i) => a + hits(p, ids6[i]!), 0) >= 20, 3000, 50);
  t.equal(pods.reduce((a, p, i) => a + hits(p, ids6[i]!), 0), 20, 'the pods served the IPv6 connections on their IPv6 listeners');
  t.equal(pods.reduce((a, p, i) => a + hits(p, ids4[i]!), 0), 20, 'and the IPv4 ones on their IPv4 listeners');

  // one pod's Ready condition false: both slices drop it, and both frontends follow
  const [out, stays] = [pods[0]!, pods[1]!];
  await kubectlOk(cluster, ['patch', 'pod', out.name, '-n', 'default', '--subresource=status', '--type=merge', '-p', JSON.stringify({
    status: { conditions: [{ type: 'Ready', status: 'False' }, { type: 'ContainersReady', status: 'False' }] },
  })]);
  t.ok(await poll(async () => (await backendsOf(ap.socketPath, ap.root, `[${VIP6}]:80`))?.join() === `[${stays.ipv6}]:8080`, 30_000), 'a pod not ready: the IPv6 frontend keeps only the other pod', { diag: await diag() });
  t.ok(await poll(async () => (await backendsOf(ap.socketPath, ap.root, `${VIP4}:80`))?.join() === `${stays.ip}:8080`, 30_000), 'and the IPv4 one too', { diag: await diag() });
  const before = hits(stays, ids6[1]!);
  ok6 = 0;
  for (let i = 0; i < 10; i++) if (await connect(client, VIP6, 80)) ok6++;
  t.equal(ok6, 10, 'IPv6 connections after the change');
  await poll(() => hits(stays, ids6[1]!) >= before + 10, 3000, 50);
  t.equal(hits(stays, ids6[1]!), before + 10, 'all served by the pod still ready');

  await kubectlOk(cluster, ['delete', 'service', 'ds', '-n', 'default']);
  t.ok(await poll(async () => (await kernelLB(ap.socketPath, ap.root)).every((e) => !e.service.startsWith(`${VIP4}:`) && !e.service.startsWith(`[${VIP6}]:`)), 30_000), 'the Service deleted: both frontends leave the kernel maps', { diag: await diag() });
  await kubectlOk(cluster, ['delete', 'deployment', 'ds', '-n', 'default']);
  await kubectlOk(cluster, ['delete', 'pod', 'ds-client', '-n', 'default', '--wait=false']);
});
