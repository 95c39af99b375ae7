import t from 'tap';
import { LBError, LBServiceManager, applyManifests, formatL3n4, parseManifests } from '../../src/cells/loadbalancer/index.js';

const SVC = {
  apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' },
  spec: {
    clusterIP: '10.96.1.10', clusterIPs: ['10.96.1.10', 'fd00:96::10'], externalIPs: ['192.0.2.10'],
    sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
    externalTrafficPolicy: 'Local', loadBalancerSourceRanges: ['192.0.2.0/24'],
    ports: [{ name: 'http', port: 80, targetPort: 'web' }, { name: 'dns', port: 53, protocol: 'UDP', targetPort: 5353 }],
  },
  status: { loadBalancer: { ingress: [{ ip: '198.51.100.1' }] } },
};
const SLICE = {
  apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
  metadata: { name: 'web-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'dns', port: 5353, protocol: 'UDP' }],
  endpoints: [
    { addresses: ['10.0.2.1'], conditions: { ready: true }, nodeName: 'n1' },
    { addresses: ['10.0.2.2'], conditions: { ready: false, serving: true, terminating: true } },
    { addresses: ['10.0.2.3'], conditions: { ready: false, serving: false, terminating: true } },
    { addresses: ['10.0.2.4'], conditions: { ready: false } },
    { addresses: ['10.0.2.5'] },
  ],
};

t.test('a Service and its EndpointSlice, as Cilium translates them', async (t) => {
  const m = parseManifests(`${JSON.stringify(SVC)}\n---\n${JSON.stringify(SLICE)}\n`);
  const [s] = m.services;
  t.match(s!.service, { key: 'shop/web', sessionAffinity: true, sessionAffinityTimeoutSec: 60, extTrafficPolicy: 'Local', intTrafficPolicy: 'Cluster', sourceRanges: ['192.0.2.0/24'] });
  t.same(s!.frontends.map((f) => `${f.type} ${f.address.ip}:${f.address.port}/${f.address.protocol} ${f.portName}`), [
    'ClusterIP 10.96.1.10:80/tcp http', 'ClusterIP fd00:96::10:80/tcp http', 'ExternalIPs 192.0.2.10:80/tcp http', 'LoadBalancer 198.51.100.1:80/tcp http',
    'ClusterIP 10.96.1.10:53/udp dns', 'ClusterIP fd00:96::10:53/udp dns', 'ExternalIPs 192.0.2.10:53/udp dns', 'LoadBalancer 198.51.100.1:53/udp dns',
  ]);
  const [sl] = m.slices;
  t.same(sl!.backends.filter((b) => b.portName === 'http').map((b) => `${b.address.ip} ${b.state}`), ['10.0.2.1 active', '10.0.2.2 terminating', '10.0.2.5 active'], 'not ready and not serving-terminating endpoints are no backends');
  const mgr = new LBServiceManager();
  const r = applyManifests(mgr, m);
  t.equal(r.services[0]!.frontends.length, 8);
  const http = mgr.list().find((f) => f.frontend.address.ip === '10.96.1.10' && f.frontend.address.port === 80)!;
  t.same(http.frontend.backends.map((b) => `${b.address.ip}:${b.address.port}`), ['10.0.2.1:8080', '10.0.2.2:8080', '10.0.2.5:8080'], 'named target port resolved through the slice');
  t.equal(http.frontend.affinityTimeoutSec, 60);
  const dns = mgr.list().find((f) => f.frontend.address.ip === '10.96.1.10' && f.frontend.address.port === 53)!;
  t.same(dns.frontend.backends.map((b) => `${b.address.port}/${b.address.protocol}`), ['5353/udp', '5353/udp', '5353/udp']);
  const v6 = mgr.list().find((f) => f.frontend.address.ip === 'fd00:96::10' && f.frontend.address.port === 80)!;
  t.same(v6.frontend.backends, [], 'an IPv4 slice gives the IPv6 frontend no backends');
});

t.test('YAML, a List, slices before their Service, headless services', async (t) => {
  const mgr = new LBServiceManager();
  const first = applyManifests(mgr, parseManifests(`apiVersion: v1\nkind: List\nitems:\n- ${JSON.stringify(SLICE)}\n`));
  t.same(first.pending, ['shop/web']);
  applyManifests(mgr, parseManifests(`apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  clusterIP: 10.96.1.10\n  ports: [{name: http, port: 80}]\n`));
  t.equal(mgr.list()[0]!.frontend.backends.length, 3, 'the waiting backends joined the service');
  const headless = parseManifests('apiVersion: v1\nkind: Service\nmetadata: {name: h}\nspec: {clusterIP: None, ports: [{port: 80}]}\n');
  t.same(headless.services[0]!.frontends, []);
  t.equal(headless.services[0]!.service.key, 'default/h');
});

t.test('bad manifests name the document and the field', async (t) => {
  const bad = (text: string, re: RegExp) => {
    let err: unknown;
    try {
      parseManifests(text);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof LBError, `${re.source}: an LBError`);
    t.match((err as Error | undefined)?.message, re);
  };
  bad('a: [', /document 1: is not YAML or JSON/);
  bad('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n', /document 1 \/kind: "apps\/v1" "Deployment" is not supported; fix: give v1 Service/);
  bad('---\n{}\n---\napiVersion: v1\nkind: Service\nspec: {}\n', /document 2 \/kind|document 1 \/kind/);
  bad('apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIP: 10.96.0.1, ports: [{port: 80}, {port: 81}]}\n', /\/spec\/ports\/0\/name: is missing on a service with several ports/);
  bad('apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIP: 10.96.0.999, ports: [{port: 80}]}\n', /\/spec\/clusterIPs\/0: "10.96.0.999" is not an IP address/);
  bad('apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIP: 10.96.0.1, ports: [{port: 80, protocol: ICMP}]}\n', /\/spec\/ports\/0\/protocol/);
  bad('apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIP: 10.96.0.1, sessionAffinity: Sticky}\n', /\/spec\/sessionAffinity/);
  bad(`${JSON.stringify({ ...SLICE, metadata: { name: 's' } })}`, /kubernetes.io~1service-name: is missing/);
  bad(`${JSON.stringify({ ...SLICE, endpoints: [{ addresses: ['fd00::1'] }] })}`, /\/endpoints\/0\/addresses\/0: fd00::1 is not an IPv4 address/);
  bad(`${JSON.stringify({ ...SLICE, addressType: 'IPX' })}`, /\/addressType/);
  bad('apiVersion: v1\nkind: List\nitems: [5]\n', /document 1 \/items\/0: is not an object/);
});

t.test('an import is checked before anything is applied', async (t) => {
  const mgr = new LBServiceManager();
  const two = parseManifests(`${JSON.stringify(SVC)}\n---\n${JSON.stringify({ ...SVC, metadata: { name: 'db', namespace: 'shop' }, spec: { ...SVC.spec, sessionAffinityConfig: undefined, loadBalancerSourceRanges: ['nope'] } })}`);
  t.throws(() => applyManifests(mgr, two), /sourceRanges\/0: "nope" is not a CIDR/);
  t.same(mgr.list(), []);
});

const NP = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'np', namespace: 'shop' }, spec, ...extra });
const feText = (fs: readonly { type: string; address: { ip: string; port: number; protocol: string } }[]) => fs.map((f) => `${f.type} ${f.address.ip}:${f.address.port}/${f.address.protocol}`);

t.test('NodePort and LoadBalancer services: node ports on the surrogates 0.0.0.0 and ::, per IP family', async (t) => {
  const dual = parseManifests(NP({
    type: 'NodePort', clusterIPs: ['10.96.1.20', 'fd00:96::20'], ipFamilies: ['IPv4', 'IPv6'],
    ports: [{ name: 'http', port: 80, nodePort: 30080 }, { name: 'dns', port: 53, protocol: 'UDP', nodePort: 30053 }],
  }));
  t.same(feText(dual.services[0]!.frontends), [
    'ClusterIP 10.96.1.20:80/tcp', 'ClusterIP fd00:96::20:80/tcp', 'NodePort 0.0.0.0:30080/tcp', 'NodePort :::30080/tcp',
    'ClusterIP 10.96.1.20:53/udp', 'ClusterIP fd00:96::20:53/udp', 'NodePort 0.0.0.0:30053/udp', 'NodePort :::30053/udp',
  ], 'each port: its ClusterIPs, then its node port on 0.0.0.0 and ::');
  t.same(dual.services[0]!.frontends.filter((f) => f.type === 'NodePort').map((f) => f.portName), ['http', 'http', 'dns', 'dns'], 'a node port selects the backends of its port');
  t.same(feText(parseManifests(NP({ type: 'NodePort', clusterIP: 'fd00:96::21', ports: [{ port: 80, nodePort: 30081 }] })).services[0]!.frontends), ['ClusterIP fd00:96::21:80/tcp', 'NodePort :::30081/tcp'], 'no ipFamilies: the cluster IPs\' families (IPv6 only)');
  t.same(feText(parseManifests(NP({ type: 'NodePort', clusterIP: '10.96.1.22', ports: [{ port: 80, nodePort: 30082 }] })).services[0]!.frontends), ['ClusterIP 10.96.1.22:80/tcp', 'NodePort 0.0.0.0:30082/tcp'], 'IPv4 only');
  const lb = parseManifests(NP({ type: 'LoadBalancer', clusterIP: '10.96.1.23', ports: [{ port: 443, nodePort: 30443 }] }, { status: { loadBalancer: { ingress: [{ ip: '198.51.100.5' }] } } }));
  t.same(feText(lb.services[0]!.frontends), ['ClusterIP 10.96.1.23:443/tcp', 'LoadBalancer 198.51.100.5:443/tcp', 'NodePort 0.0.0.0:30443/tcp'], 'a LoadBalancer service has node ports too');
  const noAlloc = parseManifests(NP({ type: 'LoadBalancer', clusterIP: '10.96.1.24', allocateLoadBalancerNodePorts: false, ports: [{ port: 443 }] }));
  t.same(feText(noAlloc.services[0]!.frontends), ['ClusterIP 10.96.1.24:443/tcp'], 'allocateLoadBalancerNodePorts: false: no node port needed');

  // the import: backends of the service serve its node ports, which service list shows as Cilium does
  const mgr = new LBServiceManager();
  applyManifests(mgr, parseManifests(`${NP({ type: 'NodePort', clusterIP: '10.96.1.20', ports: [{ name: 'http', port: 80, nodePort: 30080 }] })}\n---\n${JSON.stringify({ ...SLICE, metadata: { ...SLICE.metadata, labels: { 'kubernetes.io/service-name': 'np' } } })}`));
  const np = mgr.list().find((f) => f.frontend.type === 'NodePort')!;
  t.same([np.frontend.address.ip, np.frontend.address.port], ['0.0.0.0', 30080]);
  t.same(np.frontend.backends.map((b) => `${b.address.ip}:${b.address.port}`), ['10.0.2.1:8080', '10.0.2.2:8080', '10.0.2.5:8080'], 'the node port has the service\'s backends of its port');
  // two services cannot share a node port (of one protocol)
  const clash = parseManifests(NP({ type: 'NodePort', clusterIP: '10.96.1.29', ports: [{ port: 80, nodePort: 30080 }] }, { metadata: { name: 'other', namespace: 'shop' } }));
  t.throws(() => applyManifests(mgr, clash), { message: /0\.0\.0\.0:30080\/TCP is already a frontend of shop\/np/ });
});

t.test('bad node ports name the field and the fix', async (t) => {
  const bad = (spec: Record<string, unknown>, re: RegExp, what: string) => t.throws(() => parseManifests(NP(spec)), re, what);
  bad({ type: 'NodePort', clusterIP: '10.96.1.20', ports: [{ port: 80 }] }, /document 1 \/spec\/ports\/0\/nodePort: is missing on a NodePort service; fix: give the node port .*kubectl get svc NAME -o yaml.*no node-port allocator/, 'missing on NodePort');
  bad({ type: 'LoadBalancer', clusterIP: '10.96.1.20', ports: [{ port: 80 }] }, /\/spec\/ports\/0\/nodePort: is missing on a LoadBalancer service/, 'missing on LoadBalancer (allocation on by default)');
  bad({ type: 'NodePort', clusterIP: '10.96.1.20', ports: [{ name: 'a', port: 80, nodePort: 30080 }, { name: 'b', port: 81, nodePort: 70000 }] }, /\/spec\/ports\/1\/nodePort: 70000 is not a port; fix: give a node port between 1 and 65535/, 'out of range');
  bad({ type: 'NodePort', clusterIP: '10.96.1.20', ports: [{ port: 80, nodePort: 0 }] }, /\/spec\/ports\/0\/nodePort: 0 is not a port/, 'zero');
  bad({ type: 'NodePort', clusterIP: '10.96.1.20', ports: [{ port: 80, nodePort: '30080' }] }, /\/spec\/ports\/0\/nodePort: "30080" is not a port/, 'a string');
  bad({ clusterIP: '10.96.1.20', ports: [{ port: 80, nodePort: 30080 }] }, /\/spec\/ports\/0\/nodePort: may not be used when type is ClusterIP; fix: make the service type NodePort or LoadBalancer, or leave nodePort out/, 'on a ClusterIP service');
  bad({ type: 'Nodeport', clusterIP: '10.96.1.20', ports: [{ port: 80 }] }, /\/spec\/type: "Nodeport" is not a Service type; fix: give one of ClusterIP, NodePort, LoadBalancer, ExternalName/, 'a misspelt type');
  bad({ type: 'NodePort', clusterIP: '10.96.1.20', ipFamilies: ['IPv5'], ports: [{ port: 80, nodePort: 30080 }] }, /\/spec\/ipFamilies\/0: "IPv5" is not IPv4 or IPv6/, 'a bad IP family');
});

// Issue 22, point 4: an import is all or nothing, frontend collisions included.
const svcAt = (name: string, clusterIP: string, port = 80) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'shop' }, spec: { clusterIP, ports: [{ port }] } });
const docs = (...objs: unknown[]) => objs.map((o) => JSON.stringify(o)).join('\n---\n');
const held = (mgr: LBServiceManager) => mgr.list().map((s) => `${s.frontend.serviceKey} ${formatL3n4(s.frontend.address)} #${s.frontend.id}`);

t.test('two Services of one import on the same address: refused whole, nothing applied', async (t) => {
  const mgr = new LBServiceManager();
  t.throws(() => applyManifests(mgr, parseManifests(docs(svcAt('a', '10.96.5.1'), svcAt('b', '10.96.5.1')))), { code: 'invalid-frontend', message: /10\.96\.5\.1:80\/TCP is already a frontend of shop\/a, also in this import/ });
  t.same(held(mgr), []);
});

t.test('a new Service beside one that collides with an existing service: neither is applied', async (t) => {
  const mgr = new LBServiceManager();
  applyManifests(mgr, parseManifests(docs(svcAt('old', '10.96.5.1'))));
  mgr.upsertById(77, { service: { key: 'api:77', name: '', namespace: '', source: 'api', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] }, frontends: [{ address: { ip: '10.96.5.9', port: 80, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP' }], backends: [] });
  const before = held(mgr);
  t.throws(() => applyManifests(mgr, parseManifests(docs(svcAt('new', '10.96.5.2'), svcAt('thief', '10.96.5.1')))), /service shop\/thief \/frontends\/0\/address.*10\.96\.5\.1:80\/TCP is already a frontend of shop\/old/);
  t.throws(() => applyManifests(mgr, parseManifests(docs(svcAt('new', '10.96.5.2'), svcAt('thief', '10.96.5.9')))), /already a frontend of api:77 \(service 77\)/);
  t.same(held(mgr), before, 'the existing services, unchanged; the new one absent');
});

t.test('slices: bad backends of a Service not yet known refuse the Services of the same import', async (t) => {
  const mgr = new LBServiceManager();
  const badSlice = { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'later-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'later' } }, addressType: 'IPv4', ports: [{ port: 8080 }], endpoints: [{ addresses: ['224.0.0.5'] }] };
  t.throws(() => applyManifests(mgr, parseManifests(docs(svcAt('a', '10.96.5.1'), badSlice))), { code: 'invalid-backend' });
  t.same(held(mgr), []);
  t.same(mgr.backends('shop/later'), []);
});

t.test('an address moving between Services of one import is applied in the order that frees it first; a swap is refused', async (t) => {
  const mgr = new LBServiceManager();
  applyManifests(mgr, parseManifests(docs(svcAt('a', '10.96.5.1'), svcAt('b', '10.96.5.2'))));
  applyManifests(mgr, parseManifests(docs(svcAt('c', '10.96.5.1'), svcAt('a', '10.96.5.3'))));
  t.same(held(mgr).map((s) => s.replace(/ #\d+$/, '')).sort(), ['shop/a 10.96.5.3:80/TCP', 'shop/b 10.96.5.2:80/TCP', 'shop/c 10.96.5.1:80/TCP']);
  const before = held(mgr);
  t.throws(() => applyManifests(mgr, parseManifests(docs(svcAt('b', '10.96.5.3'), svcAt('a', '10.96.5.2')))), /take each other's addresses; fix: move the addresses in two imports/);
  t.same(held(mgr), before);
});

t.test('an import needing more service IDs than are free is refused whole', async (t) => {
  const mgr = new LBServiceManager(3);
  applyManifests(mgr, parseManifests(docs(svcAt('a', '10.96.5.1'))));
  t.throws(() => applyManifests(mgr, parseManifests(docs(svcAt('b', '10.96.5.2'), svcAt('c', '10.96.5.3'), svcAt('d', '10.96.5.4')))), /all 3 service IDs are in use/);
  t.same(held(mgr).length, 1);
  applyManifests(mgr, parseManifests(docs(svcAt('b', '10.96.5.2'), svcAt('c', '10.96.5.3'))));
  t.same(held(mgr).length, 3, 'what fits is applied');
});
