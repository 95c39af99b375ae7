// Flows' workloads against a real apiserver (the k8s harness; needs k8s): a pod of node-a adopted
// by a ReplicaSet `web-h1` (kube-controller-manager sets its controller owner reference, as for a
// Deployment's pods), the agent in this process with Kubernetes and --enable-hubble, an endpoint
// for the pod, and a monitor event of its address enriched by the agent's own Enricher: the flow
// in the Hubble ring names the workload Deployment/web, and the `hubble observe --from-workload`
// filter finds it over the socket.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { podRequest, startAgent } from '../api-integration/agent.js';
import { k8sSkip, startCluster } from './cluster.js';
import { kubectlOk, until } from './util.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IdentityAllocatorToken } from '../../src/cells/identity/index.js';
import { Enricher } from '../../src/cells/monitor/index.js';
import { HubbleObserverToken } from '../../src/cells/hubble/index.js';
import { LocalPodsToken } from '../../src/cells/k8s/index.js';
import { compileFilters, flowpb } from '../../src/hubble/index.js';
import type { MonitorEvent } from '../../src/monitor/index.js';

const skip = k8sSkip();

const pod = JSON.stringify({
  apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-h1-abcde', namespace: 'shop', labels: { app: 'web', 'pod-template-hash': 'h1' } },
  spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'localhost/none:never' }] },
});
const replicaSet = JSON.stringify({
  apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'web-h1', namespace: 'shop' },
  spec: {
    replicas: 1, selector: { matchLabels: { app: 'web', 'pod-template-hash': 'h1' } },
    template: { metadata: { labels: { app: 'web', 'pod-template-hash': 'h1' } }, spec: { containers: [{ name: 'c', image: 'localhost/none:never' }] } },
  },
});

t.test("a pod's workload from the apiserver reaches its flows", { skip }, async (t) => {
  const c = await startCluster(t);
  await kubectlOk(c, ['create', 'namespace', 'shop']);
  await kubectlOk(c, ['create', '-f', '-'], pod);
  // the ReplicaSet adopts the pod (it matches the selector): its controller owner reference
  await kubectlOk(c, ['create', '-f', '-'], replicaSet);
  const a = await startAgent(t, {
    'k8s-kubeconfig-path': c.kubeconfig, 'k8s-node-name': 'node-a', 'k8s-pod-wait-timeout': '10s',
    'enable-hubble': true, 'hubble-socket-path': join(a0dir(t), 'hubble.sock'),
  });
  await until('the caches to sync', async () => (await a.client.status()).kubernetes?.state === 'Ok');
  const pods = a.h.get(LocalPodsToken)!;
  const adopted = await until('the ReplicaSet to adopt the pod', () => {
    const p = pods.get('shop/web-h1-abcde') as { metadata?: { ownerReferences?: { kind?: string; name?: string; controller?: boolean }[] } } | undefined;
    return p?.metadata?.ownerReferences?.find((o) => o.controller) ? p : undefined;
  });
  t.match(adopted.metadata?.ownerReferences, [{ kind: 'ReplicaSet', name: 'web-h1', controller: true }], 'kube-controller-manager set the controller reference');
  await a.client.createEndpoint(1, podRequest(1, { ipv4: '10.210.0.10' }, { 'k8s-pod-name': 'web-h1-abcde', 'k8s-namespace': 'shop' }));

  const observer = a.h.get(HubbleObserverToken);
  const flows: flowpb.Flow[] = [];
  observer.items$.subscribe((i) => i.kind === 'flow' && flows.push(i.entry.flow));
  const enricher = new Enricher(a.h.get(EndpointManagerToken), a.h.get(IdentityAllocatorToken));
  const event: MonitorEvent = {
    type: 'trace', reason: '', direction: 'egress', endpointId: 1, protocol: 6, dport: 80, srcIdentity: 0, dstIdentity: 2, ifIndex: 9,
    src: '10.210.0.10', dst: '192.0.2.1', icmpType: 0, sport: 40000, tcpFlags: 2, ctStatus: 'new', match: 'none', action: 'allow', len: 60,
  };
  observer.onRecord({ kind: 'event', event: enricher.enrich(event, new Date().toISOString()) });
  t.match(flows[0]?.source, { podName: 'web-h1-abcde', namespace: 'shop', workloads: [{ kind: 'Deployment', name: 'web' }] }, 'the flow names the Deployment of the pod');
  t.same(flows[0]?.destination?.workloads, [], 'the world has none');
  const none = flowpb.FlowFilter.decode(new Uint8Array());
  t.equal(flows.filter(compileFilters([{ ...none, sourceWorkload: [{ kind: 'Deployment', name: 'web' }] }], [])).length, 1, '--from-workload Deployment/web matches it');
});

/** A directory removed at teardown (the agent's own dir is made inside startAgent). */
function a0dir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-k8s-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
