// A pod's named ports as Cilium reads them for policy: every named container port of
// spec.containers with its protocol (default TCP); unnamed ones and ones the apiserver would
// refuse are left out.
import t from 'tap';
import { podNamedPorts, type Pod } from '../../src/cells/k8s/index.js';

t.test('named container ports of every container, protocol numbers, sorted', async (t) => {
  const pod: Pod = {
    metadata: { name: 'web', namespace: 'prod' },
    spec: {
      containers: [
        { name: 'app', ports: [{ name: 'http', containerPort: 8080 }, { containerPort: 9000 }, { name: 'dns', containerPort: 53, protocol: 'UDP' }] },
        { name: 'sidecar', ports: [{ name: 'metrics', containerPort: 9090, protocol: 'TCP' }, { name: 'sctp', containerPort: 3868, protocol: 'SCTP' }] },
        { name: 'none' },
      ],
    },
  };
  t.same(podNamedPorts(pod), [
    { name: 'dns', port: 53, protocol: 17 },
    { name: 'http', port: 8080, protocol: 6 },
    { name: 'metrics', port: 9090, protocol: 6 },
    { name: 'sctp', port: 3868, protocol: 132 },
  ]);
});

t.test('nothing to read: no spec, no containers, no names, invalid numbers or protocols', async (t) => {
  t.same(podNamedPorts({ metadata: { name: 'a' } }), []);
  t.same(podNamedPorts({ metadata: { name: 'a' }, spec: { containers: [] } }), []);
  t.same(podNamedPorts({
    metadata: { name: 'a' },
    spec: { containers: [{ ports: [{ containerPort: 80 }, { name: 'zero', containerPort: 0 }, { name: 'big', containerPort: 70000 }, { name: 'icmp', containerPort: 1, protocol: 'ICMP' }] }] },
  }), []);
});
