// Endpoint labels from a Pod and its Namespace, as Cilium derives them (SanitizePodLabels and the
// default identity-relevant label filter): what is added, what a pod cannot forge, what is dropped.
import t from 'tap';
import { identityRelevant, podEndpointLabels, type Namespace, type Pod } from '../../src/cells/k8s/index.js';

const ns: Namespace = { metadata: { name: 'shop', labels: { 'kubernetes.io/metadata.name': 'shop', team: 'a' } } };

t.test('pod labels, namespace labels, namespace, service account, cluster', async (t) => {
  const pod: Pod = { metadata: { name: 'web-1', namespace: 'shop', labels: { app: 'web', tier: '' } }, spec: { serviceAccountName: 'web-sa' } };
  t.same(podEndpointLabels(pod, ns, 'c1'), [
    'k8s:app=web',
    'k8s:io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name=shop',
    'k8s:io.cilium.k8s.namespace.labels.team=a',
    'k8s:io.cilium.k8s.policy.cluster=c1',
    'k8s:io.cilium.k8s.policy.serviceaccount=web-sa',
    'k8s:io.kubernetes.pod.namespace=shop',
    'k8s:tier',
  ]);
});

t.test('a pod cannot forge the labels Cilium owns', async (t) => {
  const pod: Pod = {
    metadata: {
      name: 'evil', namespace: 'shop',
      labels: {
        'io.kubernetes.pod.namespace': 'kube-system',
        'io.cilium.k8s.policy.serviceaccount': 'admin',
        'io.cilium.k8s.policy.cluster': 'other',
        'io.cilium.k8s.namespace.labels.team': 'root',
        'io.cilium.k8s.namespace.labels.forged': 'x',
      },
    },
  };
  const labels = podEndpointLabels(pod, ns, 'c1');
  t.ok(labels.includes('k8s:io.kubernetes.pod.namespace=shop'), 'the real namespace');
  t.ok(labels.includes('k8s:io.cilium.k8s.policy.cluster=c1'), 'the real cluster');
  t.ok(labels.includes('k8s:io.cilium.k8s.namespace.labels.team=a'), 'the real namespace label');
  t.notOk(labels.some((l) => l.includes('serviceaccount')), 'no service account: the pod has none (the forged one is dropped)');
  t.notOk(labels.some((l) => l.includes('forged')), 'a namespace label the namespace lacks is dropped');
});

t.test('churning and Kubernetes-internal labels are not identity-relevant', async (t) => {
  const pod: Pod = {
    metadata: {
      name: 'web-1', namespace: 'shop',
      labels: {
        app: 'web', 'pod-template-hash': 'abc123', 'controller-revision-hash': 'r1', 'pod-template-generation': '2',
        'statefulset.kubernetes.io/pod-name': 'web-1', 'kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux',
        'io.kubernetes.container.name': 'c', 'k8s.io/x': 'y', 'app.kubernetes.io/name': 'web', 'batch.kubernetes.io/job-name': 'j',
      },
    },
  };
  const keys = podEndpointLabels(pod, { metadata: { name: 'shop' } }, 'default').map((l) => l.replace(/^k8s:/, '').replace(/=.*/, ''));
  t.same(keys.sort(), ['app', 'app.kubernetes.io/name', 'batch.kubernetes.io/job-name', 'io.cilium.k8s.policy.cluster', 'io.kubernetes.pod.namespace']);
  t.ok(identityRelevant('io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name'), 'namespace labels stay, whatever their key');
  t.notOk(identityRelevant('io.kubernetes.pod.name'));
});

t.test('the namespace must be the pod\'s', async (t) => {
  t.throws(() => podEndpointLabels({ metadata: { name: 'p', namespace: 'a' } }, { metadata: { name: 'b' } }, 'c'), /pod a\/p: the namespace given is "b", not the pod's/);
});
