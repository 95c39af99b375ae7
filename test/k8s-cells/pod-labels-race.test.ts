// A pod's labels that change between the CNI ADD's lookup and the endpoint's addition (when the
// relabel watcher cannot see the endpoint yet) still reach the endpoint: the creation reads them
// again after adding it. A scripted PodLabelSource stands in for Kubernetes.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentCells } from '../../src/cells.js';
import { module, provideInto } from '../../src/hive/cell.js';
import { testHive } from '../../src/hive/testing.js';
import { EndpointAPIManagerToken, PodLabelSourcesToken, type PodLabelSource } from '../../src/cells/endpoint/index.js';
import { isolatedDirs, podRequest } from '../api-integration/agent.js';

t.test('labels changed during the ADD are the ones the endpoint ends with', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-race-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let labels = ['k8s:app=web', 'k8s:role=admin'];
  const source: PodLabelSource = {
    enabled: true,
    // the lookup answers, then the pod is relabelled before the endpoint is added
    labelsFor: async () => {
      const at = labels;
      labels = ['k8s:app=web'];
      return at;
    },
    current: () => labels,
  };
  const h = await testHive(t, [...agentCells, module('fake-k8s', 'scripted pod labels', provideInto(PodLabelSourcesToken, () => source))], {
    config: { ...isolatedDirs(dir), 'socket-path': join(dir, 'cellium.sock'), 'datapath-mode': 'memory', 'ipv4-range': '10.211.0.0/16', 'ipv6-range': '' },
  });
  const api = h.get(EndpointAPIManagerToken);
  const ep = await api.createEndpoint({}, { ...podRequest(1, { ipv4: '10.211.0.10' }), 'k8s-pod-name': 'web', 'k8s-namespace': 'shop' });
  t.same([...ep.labels].sort(), ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=shop'], 'the removed label is gone');
  t.notOk(ep.labels.includes('k8s:role=admin'), 'no identity from the stale labels');
});
