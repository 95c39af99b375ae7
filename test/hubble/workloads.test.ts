// Flows' workloads and clusters (unprivileged): a pod's controller owner reference as its workload with
// Cilium's heuristics (a Deployment's ReplicaSet, a CronJob's Job), the observer putting them on
// both sides of a flow from the store of local pods, and the workload filters matching them; a
// side's cluster from its io.cilium.k8s.policy.cluster label, and the cluster filters.
import t from 'tap';
import type { EnrichedEvent, MonitorEvent } from '../../src/monitor/index.js';
import { clusterOf, compileFilters, flowpb, podWorkloads } from '../../src/hubble/index.js';
import { HubbleObserver, podWorkloadLookup } from '../../src/cells/hubble/index.js';
import type { AgentResource, Pod } from '../../src/cells/k8s/index.js';

const owned = (kind: string, name: string, labels: Record<string, string> = {}, controller = true): Pod =>
  ({ metadata: { name: 'p', namespace: 'shop', labels, ownerReferences: [{ apiVersion: 'apps/v1', kind, name, uid: 'u', controller }] } }) as Pod;

t.test("a pod's workload from its controller, with Cilium's heuristics", async (t) => {
  t.same(podWorkloads(owned('ReplicaSet', 'web-5d8f7c9b6', { 'pod-template-hash': '5d8f7c9b6' })), [{ kind: 'Deployment', name: 'web' }], "a Deployment's ReplicaSet");
  t.same(podWorkloads(owned('ReplicaSet', 'web-5d8f7c9b6')), [{ kind: 'ReplicaSet', name: 'web-5d8f7c9b6' }], 'a ReplicaSet without the hash label is its own');
  t.same(podWorkloads(owned('StatefulSet', 'db')), [{ kind: 'StatefulSet', name: 'db' }]);
  t.same(podWorkloads(owned('DaemonSet', 'agent')), [{ kind: 'DaemonSet', name: 'agent' }]);
  t.same(podWorkloads(owned('Job', 'backup-29374810')), [{ kind: 'CronJob', name: 'backup' }], "a CronJob's Job");
  t.same(podWorkloads(owned('Job', 'migrate')), [{ kind: 'Job', name: 'migrate' }]);
  t.same(podWorkloads(owned('ReplicaSet', 'web-1', {}, false)), [], 'an owner that is not the controller: none');
  t.same(podWorkloads({ metadata: {} }), [], 'no owner: none');
  t.same(podWorkloads(undefined), []);
});

const event: MonitorEvent = {
  type: 'trace', reason: '', direction: 'ingress', endpointId: 12, protocol: 6, dport: 80, srcIdentity: 1001, dstIdentity: 1002, ifIndex: 9,
  src: '10.0.0.1', dst: '10.0.0.2', icmpType: 0, sport: 40000, tcpFlags: 2, ctStatus: 'new', match: 'none', action: 'allow', len: 60,
};

t.test('flows carry both pods\' workloads; the workload filters match them', async (t) => {
  const pods: Record<string, Pod> = {
    'shop/web-5d8f7c9b6-x2x': owned('ReplicaSet', 'web-5d8f7c9b6', { 'pod-template-hash': '5d8f7c9b6' }),
    'shop/db-0': owned('StatefulSet', 'db'),
  };
  let gets = 0;
  const store = { get: (k: string) => (gets++, pods[k]) } as unknown as AgentResource<Pod>;
  const o = new HubbleObserver(15, 'n', undefined, podWorkloadLookup(store));
  const seen: flowpb.Flow[] = [];
  o.items$.subscribe((i) => i.kind === 'flow' && seen.push(i.entry.flow));
  const feed = (src: string, dst: string | undefined): void => o.onRecord({ kind: 'event', event: {
    event, time: new Date().toISOString(),
    source: { ID: 1, identity: 1001, labels: [], pod_name: src, namespace: 'shop' },
    destination: dst ? { ID: 2, identity: 1002, labels: [], pod_name: dst, namespace: 'shop' } : { ID: 0, identity: 2, labels: ['reserved:world'] },
  } satisfies EnrichedEvent });
  feed('shop/web-5d8f7c9b6-x2x', 'shop/db-0');
  feed('shop/web-5d8f7c9b6-x2x', undefined);
  feed('shop/gone', 'shop/db-0');
  t.same(seen[0]!.source!.workloads, [{ kind: 'Deployment', name: 'web' }]);
  t.same(seen[0]!.destination!.workloads, [{ kind: 'StatefulSet', name: 'db' }]);
  t.same(seen[1]!.destination!.workloads, [], 'a remote peer: none');
  t.same(seen[2]!.source!.workloads, [], 'a pod the store does not hold: none');
  t.equal(seen[0]!.source!.workloads, seen[1]!.source!.workloads, "one pod object's answer is kept");
  const wire = flowpb.Flow.decode(flowpb.Flow.encode(seen[0]!).finish());
  t.same(wire.source!.workloads, [{ kind: 'Deployment', name: 'web' }], 'on the wire');

  const none = flowpb.FlowFilter.decode(new Uint8Array());
  const pass = (ff: Partial<flowpb.FlowFilter>): number => seen.filter(compileFilters([{ ...none, ...ff }], [])).length;
  t.equal(pass({ sourceWorkload: [{ kind: 'Deployment', name: 'web' }] }), 2, 'hubble observe --from-workload web (kind and name)');
  t.equal(pass({ sourceWorkload: [{ kind: '', name: 'web' }] }), 2, 'a name alone');
  t.equal(pass({ destinationWorkload: [{ kind: 'StatefulSet', name: '' }] }), 2, 'a kind alone');
  t.equal(pass({ destinationWorkload: [{ kind: 'Deployment', name: 'db' }] }), 0, 'kind and name must both match');
  t.equal(podWorkloadLookup(undefined)('shop', 'shop/db-0').length, 0, 'without Kubernetes: none');
  t.ok(gets >= 3);
});

t.test("a side's cluster from its io.cilium.k8s.policy.cluster label; the cluster filters match it", async (t) => {
  t.equal(clusterOf(['k8s:app=web', 'k8s:io.cilium.k8s.policy.cluster=c1']), 'c1');
  t.equal(clusterOf(['k8s:app=web']), '', 'none without the label');
  t.equal(clusterOf(['reserved:world']), '');
  const o = new HubbleObserver(15, 'n');
  const seen: flowpb.Flow[] = [];
  o.items$.subscribe((i) => i.kind === 'flow' && seen.push(i.entry.flow));
  o.onRecord({ kind: 'event', event: {
    event, time: new Date().toISOString(),
    source: { ID: 1, identity: 1001, labels: ['k8s:app=web', 'k8s:io.cilium.k8s.policy.cluster=east'], pod_name: 'shop/web', namespace: 'shop' },
    destination: { ID: 0, identity: 2, labels: ['reserved:world'] },
  } });
  t.equal(seen[0]!.source!.clusterName, 'east');
  t.equal(seen[0]!.destination!.clusterName, '', 'a peer without the label: none');
  const none = flowpb.FlowFilter.decode(new Uint8Array());
  const pass = (ff: Partial<flowpb.FlowFilter>): number => seen.filter(compileFilters([{ ...none, ...ff }], [])).length;
  t.equal(pass({ sourceClusterName: ['east'] }), 1, 'hubble observe --from-cluster east');
  t.equal(pass({ sourceClusterName: ['ea*'] }), 1, 'a pattern');
  t.equal(pass({ sourceClusterName: ['west'] }), 0);
  t.equal(pass({ destinationClusterName: ['east'] }), 0);
});
