// Services from the apiserver on real packets (root, BPF datapath, the built agent process with its
// ServiceAccount's token bound by deploy/rbac.yaml, a real control plane with
// kube-controller-manager). Pods of node-a in network namespaces of the test, their endpoints
// created as the CNI ADD creates them (labels from the Pods):
// - a Service (ClientIP affinity) and an EndpointSlice created with kubectl: the client pod reaches
//   the ClusterIP and the slice's pod serves it; the slice changed to the other pod: new connections follow it; the
//   Service deleted: its entries leave the kernel's LB maps;
// - a Deployment whose pods get a podIP and Ready (status patched, as a kubelet would) behind a
//   NodePort Service: the EndpointSlice controller makes the slice, the named targetPort resolves
//   to the container port, the allocated node port's surrogate has both pods, connections through
//   the ClusterIP reach both pods; one pod deleted (Terminating, still
//   Ready: serving and terminating): its established stream keeps flowing, new connections all go
//   to the other pod;
// - a Service whose ClusterIP:port an imported service holds: not applied, an Event on it names the
//   holder, the module's health names it; `cellium service import` cannot take an address of the
//   apiserver's either; a Service with the node's own address (the pod gateway) as externalIP: not
//   applied, the Event says why, nothing of it in the kernel maps;
// - the agent killed, a Service deleted while it is down, restarted: the other Service is served
//   throughout, the deleted one's entries go once the caches synced; killed again and started
//   while the apiserver is down: the restored Service stays in the kernel maps and is reached,
//   and stays once the apiserver is back; deleted live, its entries go.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, endpointRequest, tempDir, until as poll, type Pod,
} from '../root-datapath-agent/fixtures.js';
import { k8sSkip, startCluster, type Cluster } from './cluster.js';
import { connect, hits, kernelLB, listen } from './lb-traffic.js';
import { agentKubeconfig, kubectlOk, nodeWithHeartbeat, until } from './util.js';

const skip = agentProcessSkip() || k8sSkip({ root: true });
const NODE = 'node-a';
const POOL = '10.231.0.0/24';
const WEB_VIP = '10.96.77.10';
const API_VIP = '10.96.77.20';
const TAKEN_VIP = '10.96.77.30';
/** The pod gateway of POOL: one of the node's own addresses. */
const GATEWAY = '10.231.0.1';

function podManifest(name: string, labels: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', labels },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'localhost/none:never', ports: [{ name: 'http', containerPort: 8080 }] }] },
  });
}

function webSlice(backends: readonly Pod[]): string {
  return JSON.stringify({
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: 'web-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4', ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: backends.map((b) => ({ addresses: [b.ip], conditions: { ready: true } })),
  });
}

/** The backends (ip:port) of `vip:port` in the kernel maps, or undefined when the frontend is not there. */
async function kernelBackends(socketPath: string, root: string, frontend: string): Promise<string[] | undefined> {
  const e = (await kernelLB(socketPath, root)).find((x) => x.service === frontend);
  return e?.backends.map((b) => b.backend.replace(/\/TCP.*$/, '')).sort();
}

async function events(c: Cluster, name: string): Promise<{ reason: string; message: string; type: string }[]> {
  const out = await c.kubectlJson<{ items: { reason: string; message: string; type: string }[] }>(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${name},involvedObject.kind=Service`]);
  return out.items;
}

t.test('Services and EndpointSlices from the apiserver into the kernel LB maps, live', { skip }, async (t) => {
  const c = new Cleanup(t);
  const cluster = await startCluster(c);
  const dir = tempDir(c, 'k8s-services');
  const kubeconfig = await agentKubeconfig(cluster, dir);
  // the Node the Deployment's pods run on, with a kubelet's heartbeat
  t.teardown(await nodeWithHeartbeat(cluster, NODE));
  for (const [name, app] of [['client', 'client'], ['web-a', 'web'], ['web-b', 'web']]) await kubectlOk(cluster, ['create', '-f', '-'], podManifest(name!, { app: app! }));

  const ap = agentProcess(c, 'k8s-services', POOL, [`--k8s-kubeconfig-path=${kubeconfig}`, `--k8s-node-name=${NODE}`]);
  let agent = ap.start();
  t.ok(await ap.up(agent), 'the agent serves its API', { log: agent.log().slice(-3000) });
  const pods = new Map<string, Pod>();
  for (const name of ['client', 'web-a', 'web-b']) {
    const pod = await allocatePod(c, ap.client, name);
    await ap.client.createEndpoint(0, endpointRequest(pod, []));
    pods.set(name, pod);
  }
  const client = pods.get('client')!;
  const webA = pods.get('web-a')!;
  const webB = pods.get('web-b')!;
  const [idA, idB] = [await listen(webA, 8080), await listen(webB, 8080)];
  const fe = `${WEB_VIP}:80/TCP`;
  const diag = async (): Promise<unknown> => ({ kernel: await kernelLB(ap.socketPath, ap.root).catch((e: Error) => e.message), log: agent.log().slice(-3000) });

  // a Service with a named targetPort and its EndpointSlice, with kubectl
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' },
    spec: { clusterIP: WEB_VIP, sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  }));
  await kubectlOk(cluster, ['create', '-f', '-'], webSlice([webA]));
  t.ok(await poll(async () => (await kernelBackends(ap.socketPath, ap.root, fe))?.join() === `${webA.ip}:8080`, 20_000), `${fe} -> ${webA.ip}:8080 in the kernel maps`, { diag: await diag() });
  t.match((await kernelLB(ap.socketPath, ap.root)).find((e) => e.service === fe), { flags: ['ClusterIP', 'non-routable', 'sessionAffinity 60s'] }, 'ClientIP session affinity with its timeout');
  let ok = 0;
  for (let i = 0; i < 10; i++) if (await connect(client, WEB_VIP, 80)) ok++;
  t.equal(ok, 10, 'the client pod reaches the ClusterIP');
  await poll(() => hits(webA, idA) >= 10, 3000, 50);
  t.equal(hits(webA, idA), 10, 'web-a served every connection');

  // the slice changes: traffic follows
  await kubectlOk(cluster, ['apply', '-f', '-'], webSlice([webB]));
  t.ok(await poll(async () => (await kernelBackends(ap.socketPath, ap.root, fe))?.join() === `${webB.ip}:8080`, 20_000), 'the slice changed: the kernel maps follow', { diag: await diag() });
  ok = 0;
  for (let i = 0; i < 10; i++) if (await connect(client, WEB_VIP, 80)) ok++;
  t.equal(ok, 10, 'connections after the change');
  await poll(() => hits(webB, idB) >= 10, 3000, 50);
  t.equal(hits(webB, idB), 10, 'web-b serves them');
  t.equal(hits(webA, idA), 10, 'web-a gets no new one');

  // a Deployment: the EndpointSlice controller makes the slice once the pods have status
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'api', namespace: 'default' },
    spec: {
      replicas: 2, selector: { matchLabels: { app: 'api' } },
      template: {
        metadata: { labels: { app: 'api' } },
        spec: { nodeName: NODE, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'localhost/none:never', ports: [{ name: 'http', containerPort: 9090 }, { name: 'echo', containerPort: 7007 }] }] },
      },
    },
  }));
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', namespace: 'default' },
    spec: { type: 'NodePort', clusterIP: API_VIP, selector: { app: 'api' }, sessionAffinity: 'None', ports: [{ name: 'web', port: 80, targetPort: 'http' }, { name: 'echo', port: 7, targetPort: 'echo' }] },
  }));
  const names = await until('the Deployment\'s two pods', async () => {
    const l = await cluster.kubectlJson<{ items: { metadata: { name: string } }[] }>(['get', 'pods', '-n', 'default', '-l', 'app=api']);
    return l.items.length === 2 ? l.items.map((p) => p.metadata.name) : undefined;
  }, 60_000);
  const apiPods: Pod[] = [];
  for (const name of names) {
    const pod = await allocatePod(c, ap.client, name);
    await ap.client.createEndpoint(0, endpointRequest(pod, []));
    await kubectlOk(cluster, ['patch', 'pod', name, '-n', 'default', '--subresource=status', '--type=merge', '-p', JSON.stringify({
      status: { phase: 'Running', podIP: pod.ip, podIPs: [{ ip: pod.ip }], conditions: [{ type: 'Ready', status: 'True' }, { type: 'ContainersReady', status: 'True' }] },
    })]);
    apiPods.push(pod);
  }
  const apiIds = await Promise.all(apiPods.map((p) => listen(p, 9090)));
  const echoIds = await Promise.all(apiPods.map((p) => listen(p, 7007, { proto: 'tcpecho' })));
  const apiFe = `${API_VIP}:80/TCP`;
  const want = apiPods.map((p) => `${p.ip}:9090`).sort().join();
  t.ok(await poll(async () => (await kernelBackends(ap.socketPath, ap.root, apiFe))?.join() === want, 30_000), `the controller's slice: ${apiFe} -> both pods on the container port`, { diag: await diag() });
  const nodePort = (await cluster.kubectlJson<{ spec: { ports: { name: string; nodePort: number }[] } }>(['get', 'service', 'api', '-n', 'default'])).spec.ports.find((p) => p.name === 'web')!.nodePort;
  const surrogate = await kernelBackends(ap.socketPath, ap.root, `0.0.0.0:${nodePort}/TCP`);
  t.equal(surrogate?.join(), want, `the allocated node port: 0.0.0.0:${nodePort} -> both pods in the kernel maps`);
  ok = 0;
  for (let i = 0; i < 40; i++) if (await connect(client, API_VIP, 80)) ok++;
  t.equal(ok, 40, 'the client reaches the Deployment through its ClusterIP');
  await poll(() => apiIds.reduce((a, id, i) => a + hits(apiPods[i]!, id), 0) >= 40, 3000, 50);
  for (const [i, p] of apiPods.entries()) t.ok(hits(p, apiIds[i]!) > 0, `${p.name} served some`);

  // a pod deleted (no kubelet finishes it: it stays Terminating, still Ready): the controller marks
  // its endpoint serving and terminating; it keeps its established stream, new connections go to the other
  const sid = client.traffic.nextId();
  client.traffic.command(`stream ${API_VIP} 7 - ${sid}`);
  t.ok(await client.traffic.waitFor('streaming', sid, 5000), 'a stream through the ClusterIP\'s echo port');
  await poll(() => apiPods.some((p, i) => hits(p, echoIds[i]!) > 0), 3000, 50);
  const on = apiPods.findIndex((p, i) => hits(p, echoIds[i]!) > 0);
  t.ok(on >= 0, 'one pod took the stream');
  const [gone, stays] = [apiPods[on]!, apiPods[1 - on]!];
  await kubectlOk(cluster, ['delete', 'pod', gone.name, '-n', 'default', '--wait=false']);
  t.ok(await poll(async () => (await kernelLB(ap.socketPath, ap.root)).find((e) => e.service === apiFe)?.backends.some((b) => b.backend === `${gone.ip}:9090/TCP (terminating)`) ?? false, 30_000),
    `${gone.name} terminating: its backend is terminating in the kernel maps`, { diag: await diag() });
  const echoes = async (): Promise<number> => {
    const from = client.traffic.output.length;
    client.traffic.command(`report ${sid}`);
    const line = new RegExp(`echoes ${sid} (-?\\d+)\\n`);
    await poll(() => line.test(client.traffic.output.slice(from)), 3000, 20);
    return Number(line.exec(client.traffic.output.slice(from))?.[1] ?? -1);
  };
  const atTerm = await echoes();
  t.ok(await poll(async () => (await echoes()) > atTerm + 5, 5000), 'the established stream to the terminating pod keeps flowing');
  const before = apiIds.map((id, i) => hits(apiPods[i]!, id));
  ok = 0;
  for (let i = 0; i < 20; i++) if (await connect(client, API_VIP, 80)) ok++;
  t.equal(ok, 20, 'new connections through the ClusterIP');
  await poll(() => hits(stays, apiIds[1 - on]!) >= before[1 - on]! + 20, 3000, 50);
  t.equal(hits(stays, apiIds[1 - on]!) - before[1 - on]!, 20, `all to ${stays.name}`);
  t.equal(hits(gone, apiIds[on]!) - before[on]!, 0, `none to the terminating ${gone.name}`);
  t.notMatch(client.traffic.output, new RegExp(`reset ${sid} `), 'the stream was never reset');
  client.traffic.command(`stop ${sid}`);

  // an address held by an imported service: the Service is not applied and says why on itself
  const file = join(dir, 'imp.yaml');
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'imp', namespace: 'default' }, spec: { clusterIP: TAKEN_VIP, ports: [{ port: 80 }] } }));
  const imported = await cli(ap.socketPath, 'service', 'import', file);
  t.equal(imported.code, 0, `cellium service import: ${imported.out} ${imported.err}`);
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'late', namespace: 'default' }, spec: { clusterIP: TAKEN_VIP, ports: [{ port: 80 }] },
  }));
  const ev = await until('an Event on Service late', async () => (await events(cluster, 'late')).find((e) => e.reason === 'ServiceNotApplied'), 20_000);
  t.match(ev, { type: 'Warning', message: /Service default\/late not applied .*10\.96\.77\.30:80\/TCP is already a frontend of default\/imp/ }, `kubectl get events: ${ev.message}`);
  const health = await until('the module health to name it', async () => {
    const v = await cli(ap.socketPath, 'status', '--verbose');
    return /k8s-services: DEGRADED - .*not applied: Service default\/late not applied/.test(v.out) ? v.out : undefined;
  }, 20_000);
  t.match(health, /k8s-services: DEGRADED - 3 Services from the apiserver in the load balancer; 1 not applied/, 'cellium status --verbose: k8s-services degraded, naming it (default/kubernetes, web and api applied)');
  // the node's own address (the pod gateway of the agent's pool) as an externalIP: refused, named
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'evil', namespace: 'default' }, spec: { clusterIP: '10.96.77.40', externalIPs: [GATEWAY], ports: [{ port: 22 }] },
  }));
  const evil = await until('an Event on Service evil', async () => (await events(cluster, 'evil')).find((e) => e.reason === 'ServiceNotApplied'), 20_000);
  t.match(evil.message, new RegExp(`${GATEWAY.replaceAll('.', '\\.')} cannot be a service frontend of type ExternalIPs: .*node`), `a Service never takes the node's address: ${evil.message}`);
  t.notOk((await kernelLB(ap.socketPath, ap.root)).some((e) => e.service.startsWith(`${GATEWAY}:`) || e.service.startsWith('10.96.77.40:')), 'nothing of it in the kernel maps');
  await kubectlOk(cluster, ['delete', 'service', 'evil', '-n', 'default']);
  const clash = join(dir, 'clash.yaml');
  writeFileSync(clash, JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'clash', namespace: 'default' }, spec: { clusterIP: WEB_VIP, ports: [{ name: 'http', port: 80 }] } }));
  const refused = await cli(ap.socketPath, 'service', 'import', clash);
  t.not(refused.code, 0, 'an import cannot take the address of an apiserver Service');
  t.match(refused.err, /10\.96\.77\.10:80\/TCP is already a frontend of the Kubernetes Service default\/web/);

  // killed; the web Service deleted while it is down; restarted: api served throughout, web gone after the sync
  agent.proc.kill('SIGKILL');
  await agent.exited;
  await kubectlOk(cluster, ['delete', 'service', 'web', '-n', 'default']);
  t.ok(await connect(client, API_VIP, 80), 'agent down: the pinned maps keep serving');
  agent = ap.start();
  t.ok(await ap.up(agent), 'the agent restarts', { log: agent.log().slice(-3000) });
  t.ok(await poll(async () => (await kernelBackends(ap.socketPath, ap.root, fe)) === undefined, 30_000), 'the Service deleted while down: its entries are gone from the kernel maps after the sync', { diag: await diag() });
  t.match(agent.log(), /Kubernetes Services synced/);
  t.equal((await kernelBackends(ap.socketPath, ap.root, apiFe))?.join(), want, 'the other Service is still there with its backends');
  ok = 0;
  for (let i = 0; i < 10; i++) if (await connect(client, API_VIP, 80)) ok++;
  t.equal(ok, 10, 'and reached');

  // killed again and started while the apiserver is down: the restored services stay in force
  agent.proc.kill('SIGKILL');
  await agent.exited;
  const restartApiserver = await cluster.killApiserver();
  agent = ap.start();
  t.ok(await ap.up(agent), 'the agent starts without the apiserver', { log: agent.log().slice(-3000) });
  const gate = await until('the status to say the resources are not synced', async () => {
    const st = await ap.client.status();
    return /0\/9 resources synced/.test(st.kubernetes?.msg ?? '') ? st.kubernetes?.msg : undefined;
  }, 30_000);
  t.match(gate, /not synced: .*services/, `cellium status: ${gate}`);
  await new Promise((r) => setTimeout(r, 2500)); // a prune round of the LB maps (--bpf-map-prune-interval=1s) has run
  t.equal((await kernelBackends(ap.socketPath, ap.root, apiFe))?.join(), want, 'apiserver down: the restored Service is in the kernel maps with its backends');
  ok = 0;
  for (let i = 0; i < 10; i++) if (await connect(client, API_VIP, 80)) ok++;
  t.equal(ok, 10, 'and reached');
  await restartApiserver();
  await until('the caches to sync', async () => /Kubernetes Services synced/.test(agent.log()), 60_000);
  t.equal((await kernelBackends(ap.socketPath, ap.root, apiFe))?.join(), want, 'apiserver back: the same Service and backends');

  // the Service deleted live: its entries go
  await kubectlOk(cluster, ['delete', 'service', 'api', '-n', 'default']);
  t.ok(await poll(async () => (await kernelBackends(ap.socketPath, ap.root, apiFe)) === undefined, 20_000), 'the Service deleted: its entries are gone from the kernel maps', { diag: await diag() });
  t.notOk((await kernelLB(ap.socketPath, ap.root)).some((e) => e.service.startsWith(`${API_VIP}:`) || e.service === `0.0.0.0:${nodePort}/TCP`), 'its wildcard and node port too');
  t.notOk(await connect(client, API_VIP, 80), 'the ClusterIP no longer answers');
});
