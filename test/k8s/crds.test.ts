// The Cilium CRDs (deploy/crds) and the agent's ClusterRole (deploy/rbac.yaml) against a real
// kube-apiserver. Admin applies only the ServiceAccount and the RBAC; everything the agent does runs
// with a token of its ServiceAccount (kubectl create token), not the admin kubeconfig: a call the
// ClusterRole forbids fails the test. Covers: ensureCrds on a fresh cluster (created, Established),
// the version rule (older replaced, newer and foreign kept), real Cilium-shaped objects accepted
// and malformed ones rejected by the schemas, the exact permissions (kubectl auth can-i), and the
// 403 error naming the missing verb and the fix.
import t, { type Test } from 'tap';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { ensureCrds, shippedCrds, SCHEMA_VERSION_ANNOTATION, type Crd } from '../../src/cells/k8s/crds.js';
import { newK8sClient } from '../../src/cells/k8s/index.js';
import { silentLogger } from '../../src/hive/logger.js';
import { k8sSkip, startCluster, type Cluster, type Run } from './cluster.js';

const root = join(import.meta.dirname, '../..');
const SA = 'system:serviceaccount:kube-system:cellium';
const skip = k8sSkip();

/** A kubeconfig for `user` holding `token`, against the cluster's apiserver and CA. */
function tokenKubeconfig(c: Cluster, dir: string, user: string, token: string): string {
  const file = join(dir, `${user}.kubeconfig`);
  writeFileSync(file, stringify({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: c.server, 'certificate-authority': c.caFile } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user } }],
    'current-context': 'x',
  }), { mode: 0o600 });
  return file;
}

async function ok(t: Test, r: Promise<Run>, what: string): Promise<Run> {
  const res = await r;
  t.equal(res.code, 0, `${what}: ${res.stderr.trim()}`);
  return res;
}

t.test('shippedCrds refuses a broken deploy/crds, naming the file and the field', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-crds-files-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.throws(() => shippedCrds(dir), /has no \*\.yaml/);
  const good = readFileSync(join(root, 'deploy/crds/ciliumnodes.yaml'), 'utf8');
  const cases: [string, string, RegExp][] = [
    ['two documents', `${good}\n---\n${good}`, /document: must be one YAML document/],
    ['not a CRD', good.replace('kind: CustomResourceDefinition', 'kind: ConfigMap'), /kind: must be an apiextensions.k8s.io\/v1 CustomResourceDefinition/],
    ['name not plural.group', good.replace('name: ciliumnodes.cilium.io', 'name: nodes.cilium.io'), /metadata\.name: must be <spec\.names\.plural>\.<spec\.group>/],
    ['no schema version', good.replace(`${SCHEMA_VERSION_ANNOTATION}: "1"`, 'other: "1"'), /cellium\.io\/schema-version.*must be a positive integer/],
    ['schema version not a number', good.replace(`${SCHEMA_VERSION_ANNOTATION}: "1"`, `${SCHEMA_VERSION_ANNOTATION}: "1.5"`), /must be a positive integer/],
  ];
  for (const [what, text, why] of cases) {
    writeFileSync(join(dir, 'x.yaml'), text);
    t.throws(() => shippedCrds(dir), why, what);
  }
  writeFileSync(join(dir, 'x.yaml'), good);
  t.same(shippedCrds(dir).map((s) => [s.name, s.version]), [['ciliumnodes.cilium.io', 1]]);
});

t.test('ensureCrds re-reads and retries when another agent wrote the CRD first (409)', async (t) => {
  // A fake apiserver (unit test): the first PUT loses the race to another agent's write.
  const dir = mkdtempSync(join(tmpdir(), 'cellium-crds-409-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'ciliumnodes.yaml'), readFileSync(join(root, 'deploy/crds/ciliumnodes.yaml'), 'utf8')
    .replace(`${SCHEMA_VERSION_ANNOTATION}: "1"`, `${SCHEMA_VERSION_ANNOTATION}: "2"`));
  const established = { conditions: [{ type: 'Established', status: 'True' }] };
  let installed: Crd = { ...shippedCrds()[4]!.crd, status: established };
  installed = { ...installed, metadata: { ...installed.metadata, resourceVersion: '10' } };
  const puts: string[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (b: Buffer) => (text += b.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.url !== '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ciliumnodes.cilium.io') return res.writeHead(404).end('{}');
      if (req.method === 'GET') return res.end(JSON.stringify(installed));
      const body = JSON.parse(text) as Crd;
      puts.push(body.metadata.resourceVersion ?? '');
      if (body.metadata.resourceVersion !== installed.metadata.resourceVersion || puts.length === 1) {
        installed = { ...installed, metadata: { ...installed.metadata, resourceVersion: String(Number(installed.metadata.resourceVersion) + 1) } };
        return res.writeHead(409).end(JSON.stringify({ kind: 'Status', message: 'the object has been modified' }));
      }
      installed = { ...body, metadata: { ...body.metadata, resourceVersion: '99' }, status: established };
      return res.end(JSON.stringify(installed));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, stringify({
    apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'u', user: { token: 't' } }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }], 'current-context': 'x',
  }));
  const client = newK8sClient({ k8sKubeconfigPath: kubeconfig, k8sApiServer: '' }, {});
  const out = await ensureCrds(client, silentLogger(), { dir });
  t.same(out, [{ name: 'ciliumnodes.cilium.io', action: 'updated', why: 'schema version 1 -> 2' }]);
  t.same(puts, ['10', '11'], 'the second PUT carries the resourceVersion read again after the 409');
  t.equal(installed.metadata.annotations?.[SCHEMA_VERSION_ANNOTATION], '2');
});

t.test('CRDs and RBAC on a real apiserver, as the agent\'s ServiceAccount', { skip }, async (t) => {
  const c = await startCluster(t);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-crds-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const docs = parseAllDocuments(readFileSync(join(root, 'deploy/daemonset.yaml'), 'utf8')).map((d) => d.toJS() as { kind: string });
  const sa = docs.find((d) => d.kind === 'ServiceAccount');
  await ok(t, c.kubectl(['apply', '-f', '-'], stringify(sa)), 'admin applies the ServiceAccount of deploy/daemonset.yaml');
  await ok(t, c.kubectl(['apply', '-f', join(root, 'deploy/rbac.yaml')]), 'admin applies deploy/rbac.yaml');
  const token = (await ok(t, c.kubectl(['-n', 'kube-system', 'create', 'token', 'cellium', '--duration=1h']), 'token')).stdout.trim();
  const saConfig = tokenKubeconfig(c, dir, 'cellium', token);
  const asAgent = (args: readonly string[], input?: string): Promise<Run> => c.kubectl(['--kubeconfig', saConfig, ...args], input);
  const whoami = await ok(t, asAgent(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']), 'whoami');
  t.equal(whoami.stdout, SA, 'the agent\'s calls authenticate as its ServiceAccount, not admin');
  const agent = newK8sClient({ k8sKubeconfigPath: saConfig, k8sApiServer: '' }, {});
  const shipped = shippedCrds();
  t.same(shipped.map((s) => s.name), [
    'ciliumclusterwidenetworkpolicies.cilium.io', 'ciliumendpoints.cilium.io', 'ciliumidentities.cilium.io',
    'ciliumnetworkpolicies.cilium.io', 'ciliumnodes.cilium.io',
  ], 'the five Cilium CRDs ship in deploy/crds');

  t.test('fresh cluster: ensureCrds creates all five, each Established; a second run keeps them', async (t) => {
    const first = await ensureCrds(agent, silentLogger());
    t.same(first.map((o) => o.action), ['created', 'created', 'created', 'created', 'created']);
    const list = await c.kubectlJson<{ items: Crd[] }>(['get', 'crd']);
    for (const s of shipped) {
      const crd = list.items.find((i) => i.metadata.name === s.name);
      t.ok(crd?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'), `${s.name} Established`);
      t.ok(crd?.status?.conditions?.some((x) => x.type === 'NamesAccepted' && x.status === 'True'), `${s.name} NamesAccepted`);
    }
    const again = await ensureCrds(agent, silentLogger());
    t.same(again.map((o) => o.action), ['kept', 'kept', 'kept', 'kept', 'kept']);
    const shortNames = await ok(t, asAgent(['get', 'cnp,ccnp,cep,ciliumid,cn', '-A']), 'short names resolve');
    t.match(shortNames.stderr + shortNames.stdout, /No resources found/);
  });

  t.test('version rule: an older Cellium CRD is replaced, a newer or foreign one is kept', async (t) => {
    const newer = join(dir, 'crds-v2');
    cpSync(join(root, 'deploy/crds'), newer, { recursive: true });
    for (const f of ['ciliumnodes.yaml', 'ciliumidentities.yaml']) {
      const p = join(newer, f);
      writeFileSync(p, readFileSync(p, 'utf8').replace(`${SCHEMA_VERSION_ANNOTATION}: "1"`, `${SCHEMA_VERSION_ANNOTATION}: "2"`)
        .replace('description: Time duration since creation of Ciliumnode', 'description: Age of the CiliumNode (schema 2)'));
    }
    // ciliumidentities: installed by someone else (no annotation): not Cellium's, never replaced.
    await ok(t, c.kubectl(['annotate', 'crd', 'ciliumidentities.cilium.io', `${SCHEMA_VERSION_ANNOTATION}-`]), 'drop the annotation');
    const out = await ensureCrds(agent, silentLogger(), { dir: newer });
    const by = new Map(out.map((o) => [o.name, o]));
    t.equal(by.get('ciliumnodes.cilium.io')?.action, 'updated', 'older (1) replaced by shipped 2');
    t.equal(by.get('ciliumidentities.cilium.io')?.action, 'kept', 'foreign CRD kept');
    t.match(by.get('ciliumidentities.cilium.io')?.why, /not Cellium's/);
    const cn = await c.kubectlJson<Crd & { spec: { versions: { additionalPrinterColumns: { description?: string }[] }[] } }>(['get', 'crd', 'ciliumnodes.cilium.io']);
    t.equal(cn.metadata.annotations?.[SCHEMA_VERSION_ANNOTATION], '2');
    t.ok(cn.spec.versions[0]!.additionalPrinterColumns.some((p) => p.description === 'Age of the CiliumNode (schema 2)'), 'the new schema is installed');
    const back = await ensureCrds(agent, silentLogger());
    t.equal(back.find((o) => o.name === 'ciliumnodes.cilium.io')?.action, 'kept', 'an older agent never downgrades a newer schema');
    t.match(back.find((o) => o.name === 'ciliumnodes.cilium.io')?.why, /installed schema version 2 >= shipped 1/);
  });

  t.test('real Cilium objects are accepted, malformed ones rejected by the schema', async (t) => {
    // From Cilium's docs (L3/L4 policy example), created by admin: the agent only reads policies.
    const cnp = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'l4-rule', namespace: 'default' },
      spec: {
        description: 'L3-L4 policy to restrict deathstar access to empire ships only',
        endpointSelector: { matchLabels: { org: 'empire', class: 'deathstar' } },
        ingress: [{ fromEndpoints: [{ matchLabels: { org: 'empire' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }], rules: { http: [{ method: 'POST', path: '/v1/request-landing' }] } }] }],
      },
    };
    await ok(t, c.kubectl(['create', '-f', '-'], JSON.stringify(cnp)), 'CiliumNetworkPolicy accepted');
    const stored = await c.kubectlJson<typeof cnp>(['-n', 'default', 'get', 'cnp', 'l4-rule']);
    t.same(stored.spec, cnp.spec, 'stored whole: L7 rules are kept, not pruned');
    // Cilium's DNS-based (toFQDNs) example: the DNS proxy rules and FQDN selectors are kept as they come.
    const fqdn = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'fqdn', namespace: 'default' },
      spec: {
        endpointSelector: { matchLabels: { org: 'empire', class: 'mediabot' } },
        egress: [
          { toFQDNs: [{ matchName: 'api.github.com' }] },
          {
            toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'kube-system', 'k8s:k8s-app': 'kube-dns' } }],
            toPorts: [{ ports: [{ port: '53', protocol: 'ANY' }], rules: { dns: [{ matchPattern: '*' }] } }],
          },
        ],
      },
    };
    await ok(t, c.kubectl(['create', '-f', '-'], JSON.stringify(fqdn)), 'CiliumNetworkPolicy with toFQDNs accepted');
    t.same((await c.kubectlJson<typeof fqdn>(['-n', 'default', 'get', 'cnp', 'fqdn'])).spec, fqdn.spec, 'stored whole');
    const ccnp = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumClusterwideNetworkPolicy', metadata: { name: 'cidr-egress' },
      specs: [
        { endpointSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] }, egress: [{ toCIDRSet: [{ cidr: '10.0.0.0/8', except: ['10.96.0.0/12'] }], toEntities: ['kube-apiserver'] }] },
        { nodeSelector: {}, ingressDeny: [{ fromEntities: ['world'] }] },
      ],
    };
    await ok(t, c.kubectl(['create', '-f', '-'], JSON.stringify(ccnp)), 'CiliumClusterwideNetworkPolicy accepted');
    // The agent writes these kinds: with its own token.
    const cep = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumEndpoint', metadata: { name: 'web-0', namespace: 'default' },
      status: {
        id: 1234, state: 'ready', identity: { id: 56789, labels: ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default'] },
        networking: { addressing: [{ ipv4: '10.0.1.23', ipv6: 'fd00::17' }], node: '192.168.1.10' },
        encryption: {}, 'external-identifiers': { 'container-id': 'abc', 'k8s-namespace': 'default', 'k8s-pod-name': 'web-0', 'pod-name': 'default/web-0' },
        'named-ports': [{ name: 'http', port: 8080, protocol: 'TCP' }],
        policy: { ingress: { enforcing: true, state: '<status disabled>' }, egress: { enforcing: false, state: '<status disabled>' } },
      },
    };
    await ok(t, asAgent(['create', '-f', '-'], JSON.stringify(cep)), 'CiliumEndpoint accepted (as the agent)');
    const cid = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumIdentity',
      metadata: { name: '56789', labels: { app: 'web', 'io.kubernetes.pod.namespace': 'default' } },
      'security-labels': { 'k8s:app': 'web', 'k8s:io.kubernetes.pod.namespace': 'default', 'k8s:io.cilium.k8s.policy.serviceaccount': 'default' },
    };
    await ok(t, asAgent(['create', '-f', '-'], JSON.stringify(cid)), 'CiliumIdentity accepted (as the agent)');
    const cn = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumNode', metadata: { name: 'node-1' },
      spec: {
        addresses: [{ ip: '192.168.1.10', type: 'InternalIP' }, { ip: '10.0.1.1', type: 'CiliumInternalIP' }],
        health: { ipv4: '10.0.1.2' }, encryption: {}, ipam: { podCIDRs: ['10.0.1.0/24'], pool: {} }, bootid: 'b00t',
      },
    };
    await ok(t, asAgent(['create', '-f', '-'], JSON.stringify(cn)), 'CiliumNode accepted (as the agent)');
    const cols = await ok(t, asAgent(['get', 'cn', 'node-1']), 'CiliumNode printer columns');
    t.match(cols.stdout, /CILIUMINTERNALIP\s+INTERNALIP/);
    t.match(cols.stdout, /10\.0\.1\.1\s+192\.168\.1\.10/);

    const bad: [string, unknown, RegExp][] = [
      ['CNP: matchLabels value not a string', { ...cnp, metadata: { name: 'bad1', namespace: 'default' }, spec: { ...cnp.spec, endpointSelector: { matchLabels: { org: 5 } } } }, /matchLabels\.org.*string/],
      ['CNP: both endpointSelector and nodeSelector', { ...cnp, metadata: { name: 'bad2', namespace: 'default' }, spec: { ...cnp.spec, nodeSelector: {} } }, /spec.*oneOf|must validate one and only one/],
      ['CNP: no rule list at all', { ...cnp, metadata: { name: 'bad3', namespace: 'default' }, spec: { endpointSelector: {} } }, /spec/],
      ['CNP: ingress not a list', { ...cnp, metadata: { name: 'bad4', namespace: 'default' }, spec: { endpointSelector: {}, ingress: 'from-everywhere' } }, /spec\.ingress.*array/],
      ['CCNP: unknown entity', { ...ccnp, metadata: { name: 'bad5' }, specs: [{ endpointSelector: {}, egress: [{ toEntities: ['everything'] }] }] }, /toEntities.*Unsupported value/],
      ['CEP: unknown state', { ...cep, metadata: { name: 'bad6', namespace: 'default' }, status: { ...cep.status, state: 'happy' } }, /status\.state.*Unsupported value/],
      ['CiliumIdentity: no security-labels', { apiVersion: 'cilium.io/v2', kind: 'CiliumIdentity', metadata: { name: '99999' } }, /security-labels.*Required/],
      ['CiliumNode: addresses not a list', { ...cn, metadata: { name: 'bad8' }, spec: { addresses: '1.2.3.4' } }, /spec\.addresses.*array/],
    ];
    for (const [what, obj, why] of bad) {
      const r = await c.kubectl(['create', '-f', '-'], JSON.stringify(obj));
      t.not(r.code, 0, `${what}: rejected`);
      t.match(r.stderr, why, `${what}: the error names the field`);
    }
  });

  t.test('the ServiceAccount may do exactly what the agent needs (kubectl auth can-i with its token)', async (t) => {
    const allowed = [
      'get pods', 'list pods', 'watch pods', 'list namespaces', 'watch nodes', 'list services',
      'list endpointslices.discovery.k8s.io', 'watch networkpolicies.networking.k8s.io',
      'get customresourcedefinitions.apiextensions.k8s.io', 'create customresourcedefinitions.apiextensions.k8s.io',
      'update customresourcedefinitions.apiextensions.k8s.io/ciliumnodes.cilium.io',
      'list ciliumnetworkpolicies.cilium.io', 'watch ciliumclusterwidenetworkpolicies.cilium.io',
      'update ciliumnetworkpolicies.cilium.io --subresource=status',
      'get ciliumendpoints.cilium.io', 'list ciliumendpoints.cilium.io', 'watch ciliumendpoints.cilium.io', 'create ciliumendpoints.cilium.io', 'patch ciliumendpoints.cilium.io', 'delete ciliumendpoints.cilium.io',
      'create ciliumidentities.cilium.io', 'delete ciliumidentities.cilium.io', 'patch ciliumidentities.cilium.io', 'watch ciliumidentities.cilium.io',
      'create leases.coordination.k8s.io',
      'create ciliumnodes.cilium.io', 'update ciliumnodes.cilium.io', 'update ciliumnodes.cilium.io --subresource=status',
      'create events', 'create events.events.k8s.io', 'get leases.coordination.k8s.io', 'update leases.coordination.k8s.io',
    ];
    const denied = [
      'get secrets', 'list secrets', 'delete pods', 'create pods', 'update nodes', 'patch nodes', 'delete namespaces',
      'create networkpolicies.networking.k8s.io', 'update services', 'create endpointslices.discovery.k8s.io',
      'delete customresourcedefinitions.apiextensions.k8s.io', 'update customresourcedefinitions.apiextensions.k8s.io/widgets.example.com',
      'create ciliumnetworkpolicies.cilium.io', 'update ciliumnetworkpolicies.cilium.io', 'delete ciliumclusterwidenetworkpolicies.cilium.io',
      'update ciliumidentities.cilium.io', 'delete ciliumnodes.cilium.io', 'update ciliumendpoints.cilium.io', 'delete leases.coordination.k8s.io',
      'create serviceaccounts/token', 'create clusterrolebindings.rbac.authorization.k8s.io', 'impersonate users',
    ];
    for (const q of allowed) {
      const r = await asAgent(['auth', 'can-i', ...q.split(' ')]);
      t.equal(r.stdout.trim(), 'yes', `can ${q}`);
    }
    for (const q of denied) {
      const r = await asAgent(['auth', 'can-i', ...q.split(' ')]);
      t.equal(r.stdout.trim(), 'no', `cannot ${q}`);
    }
  });

  t.test('without the RBAC, ensureCrds fails naming the verb and the fix', async (t) => {
    await ok(t, c.kubectl(['-n', 'kube-system', 'create', 'serviceaccount', 'nobody']), 'a ServiceAccount with no roles');
    const nobodyToken = (await ok(t, c.kubectl(['-n', 'kube-system', 'create', 'token', 'nobody', '--duration=1h']), 'token')).stdout.trim();
    const nobody = newK8sClient({ k8sKubeconfigPath: tokenKubeconfig(c, dir, 'nobody', nobodyToken), k8sApiServer: '' }, {});
    await t.rejects(ensureCrds(nobody, silentLogger()), /get customresourcedefinitions .* is forbidden .*needs verb "get" on customresourcedefinitions .*kubectl apply -f deploy\/rbac\.yaml/);
  });
});
