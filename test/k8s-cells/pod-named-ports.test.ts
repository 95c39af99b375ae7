// A pod's named container ports reach its endpoint and the enforced policy: the agent hive (memory
// datapath, the real policy and endpoint cells) with the Kubernetes pod label source over Pods and
// Namespaces resources fed by a scripted apiserver (the real one is in netpol-table.test.ts). A
// CNP allows app=client to app=web's port `http`: the ADD gives web its named ports and the
// datapath allows that number only; the Pod changing its `http` port (and then renaming it) moves
// what is allowed after relabelEndpoints, without a new ADD.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentCells } from '../../src/cells.js';
import { module, provideInto } from '../../src/hive/cell.js';
import { testHive } from '../../src/hive/testing.js';
import { LoggerToken } from '../../src/hive/logger.js';
import { DatapathToken, Proto } from '../../src/cells/datapath/index.js';
import { EndpointAPIManagerToken, EndpointManagerImplToken, PodLabelSourcesToken } from '../../src/cells/endpoint/index.js';
import { PolicyRepositoryToken } from '../../src/cells/policy/index.js';
import { K8sPodLabels, relabelEndpoints, Resource, type ListWatcher, type Namespace, type Pod, type WatchEvent } from '../../src/cells/k8s/index.js';
import { isolatedDirs, podRequest } from '../api-integration/agent.js';

/** A scripted apiserver for one kind: the list answers `items`; `emit` sends a watch event. */
class ScriptedLW<T> implements ListWatcher<T> {
  private onEvent?: (ev: WatchEvent<T>) => void;
  constructor(private readonly items: readonly T[]) {}
  async list(): Promise<{ items: readonly T[]; resourceVersion: string }> {
    return { items: this.items, resourceVersion: '1' };
  }
  async watch(_rv: string, onEvent: (ev: WatchEvent<T>) => void): Promise<{ done: Promise<void>; stop: () => void }> {
    this.onEvent = onEvent;
    let stop!: () => void;
    const done = new Promise<void>((resolve) => (stop = resolve));
    return { done, stop };
  }
  emit(ev: WatchEvent<T>): void {
    if (!this.onEvent) throw new Error('no watch running');
    this.onEvent(ev);
  }
}

const pod = (name: string, app: string, ports: { name: string; containerPort: number; protocol?: string }[] = []): Pod => ({
  metadata: { name, namespace: 'shop', labels: { app }, resourceVersion: '1' },
  spec: { nodeName: 'node-a', containers: [{ name: 'c', ports }] },
});

t.test('named ports from the Pod: enforced at the ADD, followed when the Pod\'s port changes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-named-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const podsLW = new ScriptedLW<Pod>([pod('web', 'web', [{ name: 'http', containerPort: 8080 }]), pod('client', 'client')]);
  const pods = new Resource<Pod>('pods', podsLW);
  const nss = new Resource<Namespace>('namespaces', new ScriptedLW<Namespace>([{ metadata: { name: 'shop', resourceVersion: '1' } }]));
  for (const r of [pods, nss]) {
    r.start();
    t.teardown(() => r.stop());
  }
  await Promise.all([pods.synced, nss.synced]);
  const source = new K8sPodLabels(pods, nss, 'c1', 'node-a', 2000);
  const h = await testHive(t, [...agentCells, module('scripted-k8s', 'pod labels from scripted resources', provideInto(PodLabelSourcesToken, () => source))], {
    config: { ...isolatedDirs(dir), 'socket-path': join(dir, 'cellium.sock'), 'datapath-mode': 'memory', 'ipv4-range': '10.213.0.0/16', 'ipv6-range': '' },
  });
  h.get(PolicyRepositoryToken).import(JSON.stringify([{
    endpointSelector: { matchLabels: { 'k8s:app': 'web' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { 'k8s:app': 'client' } }], toPorts: [{ ports: [{ port: 'http', protocol: 'TCP' }] }] }],
  }]));
  const api = h.get(EndpointAPIManagerToken);
  const web = await api.createEndpoint({}, { ...podRequest(1, { ipv4: '10.213.0.10' }), 'k8s-pod-name': 'web', 'k8s-namespace': 'shop' });
  await api.createEndpoint({}, { ...podRequest(2, { ipv4: '10.213.0.11' }), 'k8s-pod-name': 'client', 'k8s-namespace': 'shop' });
  t.same(web.toModel().status?.namedPorts, [{ name: 'http', port: 8080, protocol: 'TCP' }], 'the ADD gave the endpoint its pod\'s named port');
  const dp = h.get(DatapathToken);
  const allowed = async (dport: number) => (await dp.verdict(web.id, 'ingress', { src: '10.213.0.11', dst: '10.213.0.10', protocol: Proto.TCP, dport })).allowed;
  t.equal(await allowed(8080), true, 'client -> web:8080 (http) allowed');
  t.equal(await allowed(9000), false, 'client -> web:9000 denied');

  const manager = h.get(EndpointManagerImplToken);
  const log = h.get(LoggerToken);
  // the Pod's http port moves to 9000 (a new pod under the same name, as a rollout makes it)
  podsLW.emit({ type: 'MODIFIED', object: { ...pod('web', 'web', [{ name: 'http', containerPort: 9000 }]), metadata: { ...pod('web', 'web').metadata, resourceVersion: '2' } } });
  await relabelEndpoints(source, manager, { namespace: 'shop', pod: 'web' }, log);
  t.same(web.toModel().status?.namedPorts, [{ name: 'http', port: 9000, protocol: 'TCP' }], 'the new number reached the endpoint');
  t.equal(await allowed(9000), true, 'client -> web:9000 allowed now');
  t.equal(await allowed(8080), false, 'the old number is denied again');

  // the port renamed: the policy's name matches nothing on this pod
  podsLW.emit({ type: 'MODIFIED', object: { ...pod('web', 'web', [{ name: 'web', containerPort: 9000 }]), metadata: { ...pod('web', 'web').metadata, resourceVersion: '3' } } });
  await relabelEndpoints(source, manager, { namespace: 'shop', pod: 'web' }, log);
  t.equal(await allowed(9000), false, 'renamed away from http: nothing is allowed');
  t.equal(await allowed(8080), false, 'and not the old number');
});
