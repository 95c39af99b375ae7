// Kubernetes NetworkPolicy semantics as a table of cases on real packets (root, BPF datapath, a
// real apiserver): the built agent runs with its ServiceAccount's token; namespaces prod (team=a)
// and dev (team=b) and five Pods of this node are created in the apiserver, each attached by a
// real CNI ADD (the shim, K8S_POD_* args) into a network namespace of this test; a sixth namespace
// stands outside the cluster (two "world" addresses, one inside an ipBlock's except). Each case
// replaces the NetworkPolicies (kubectl), waits until every endpoint realized the policy revision
// that holds exactly them, and checks TCP connects both ways: what must pass and what must not.
// Then an ipBlock selects pods by address (except, /32, a pod of the identity outside the block,
// ingress). Last, a named egress port follows the destination pods: a pod added under the name opens its
// number (the node's named-port map changed, the client's policy map recomputed), its removal
// closes it, the same through a CiliumEndpoint of another node, and ports the name never stood
// for are probed all along and never pass.
import t from 'tap';
import { existsSync, writeFileSync } from 'node:fs';
import { exchange, ip, TrafficAgent, uniq } from '../bpf/fixtures/topology.js';
import { agentProcess, agentProcessSkip, Cleanup, tempDir } from '../root-datapath-agent/fixtures.js';
import { buildShim, cni, netns } from '../root-e2e/agent.js';
import { k8sSkip, startCluster, type Cluster } from './cluster.js';
import { agentKubeconfig, kubectlOk, until } from './util.js';

const skip = agentProcessSkip() || k8sSkip({ root: true });
const NODE = 'node-a';
const POOL = '10.247.26.0/24';
/** Outside the cluster: the host side, an address inside the ipBlock, one in its except. */
const EXT = { host: '10.247.126.1', inside: '10.247.126.10', excepted: '10.247.126.200', cidr: '10.247.126.0/24', except: '10.247.126.128/25' };

t.before(() => {
  if (!skip) buildShim();
});

/** Something that can send and receive: a pod or the outside. */
interface Peer {
  readonly ip: string;
  readonly traffic: TrafficAgent;
}

type PeerName = 'web' | 'db' | 'client' | 'devClient' | 'devOther' | 'ext' | 'extExcept';
/** [from, to, TCP port, whether the connection must be made] */
type Probe = readonly [PeerName, PeerName, number, 'open' | 'closed'];

interface Case {
  readonly name: string;
  readonly policies: readonly object[];
  readonly probes: readonly Probe[];
}

const sel = (labels: Record<string, string>) => ({ matchLabels: labels });
const np = (name: string, namespace: string, spec: object) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec });
const ipBlock = { ipBlock: { cidr: EXT.cidr, except: [EXT.except] } };

const CASES: readonly Case[] = [
  {
    name: 'no policy: every pod reaches every pod and the outside',
    policies: [],
    probes: [['client', 'web', 80, 'open'], ['devClient', 'db', 5432, 'open'], ['web', 'ext', 80, 'open'], ['ext', 'db', 80, 'open']],
  },
  {
    name: 'default deny ingress (podSelector {}, policyTypes [Ingress])',
    policies: [np('deny-in', 'prod', { podSelector: {}, policyTypes: ['Ingress'] })],
    probes: [
      ['client', 'web', 80, 'closed'], ['devClient', 'web', 80, 'closed'], ['ext', 'db', 80, 'closed'],
      ['web', 'devOther', 80, 'open'], ['web', 'ext', 80, 'open'], ['devClient', 'devOther', 80, 'open'],
    ],
  },
  {
    name: 'default deny egress (podSelector {}, policyTypes [Egress])',
    policies: [np('deny-out', 'prod', { podSelector: {}, policyTypes: ['Egress'] })],
    probes: [
      ['web', 'devOther', 80, 'closed'], ['client', 'web', 80, 'closed'], ['web', 'ext', 80, 'closed'],
      ['devClient', 'web', 80, 'open'], ['ext', 'db', 80, 'open'], ['devClient', 'devOther', 80, 'open'],
    ],
  },
  {
    name: 'allow by podSelector: pods of the policy\'s namespace only, every port',
    policies: [np('web-from-client', 'prod', { podSelector: sel({ app: 'web' }), ingress: [{ from: [{ podSelector: sel({ app: 'client' }) }] }] })],
    probes: [
      ['client', 'web', 80, 'open'], ['client', 'web', 81, 'open'],
      ['db', 'web', 80, 'closed'], ['devClient', 'web', 80, 'closed'], ['ext', 'web', 80, 'closed'],
      ['client', 'db', 80, 'open'],
    ],
  },
  {
    name: 'allow by namespaceSelector: every pod of the namespaces with the label',
    policies: [np('web-from-team-b', 'prod', { podSelector: sel({ app: 'web' }), ingress: [{ from: [{ namespaceSelector: sel({ team: 'b' }) }] }] })],
    probes: [['devClient', 'web', 80, 'open'], ['devOther', 'web', 80, 'open'], ['client', 'web', 80, 'closed'], ['ext', 'web', 80, 'closed']],
  },
  {
    name: 'namespaceSelector and podSelector in one peer: both must hold',
    policies: [np('web-from-b-clients', 'prod', { podSelector: sel({ app: 'web' }), ingress: [{ from: [{ namespaceSelector: sel({ team: 'b' }), podSelector: sel({ app: 'client' }) }] }] })],
    probes: [['devClient', 'web', 80, 'open'], ['devOther', 'web', 80, 'closed'], ['client', 'web', 80, 'closed']],
  },
  {
    name: 'ipBlock with except, egress and ingress',
    policies: [
      np('web-to-ext', 'prod', { podSelector: sel({ app: 'web' }), policyTypes: ['Egress'], egress: [{ to: [ipBlock] }] }),
      np('db-from-ext', 'prod', { podSelector: sel({ app: 'db' }), ingress: [{ from: [ipBlock] }] }),
    ],
    probes: [
      ['web', 'ext', 80, 'open'], ['web', 'extExcept', 80, 'closed'], ['web', 'db', 80, 'closed'],
      ['ext', 'db', 80, 'open'], ['extExcept', 'db', 80, 'closed'], ['client', 'db', 80, 'closed'],
    ],
  },
  {
    name: 'port with endPort: the range and nothing beside it',
    policies: [np('web-range', 'prod', { podSelector: sel({ app: 'web' }), ingress: [{ from: [{ podSelector: sel({ app: 'client' }) }], ports: [{ protocol: 'TCP', port: 8000, endPort: 8010 }] }] })],
    probes: [
      ['client', 'web', 8000, 'open'], ['client', 'web', 8005, 'open'], ['client', 'web', 8010, 'open'],
      ['client', 'web', 7999, 'closed'], ['client', 'web', 8011, 'closed'], ['client', 'web', 80, 'closed'],
    ],
  },
  {
    name: 'named port: each selected pod\'s own number for the name; a pod without it allows nothing',
    policies: [np('named-http', 'prod', { podSelector: {}, ingress: [{ from: [{ podSelector: {} }], ports: [{ port: 'http' }] }] })],
    probes: [
      ['client', 'web', 8080, 'open'], ['client', 'web', 9090, 'closed'], ['client', 'web', 80, 'closed'],
      ['client', 'db', 9090, 'open'], ['client', 'db', 8080, 'closed'],
      ['web', 'client', 8080, 'closed'], ['web', 'client', 9090, 'closed'],
    ],
  },
  {
    name: 'named egress port: each destination pod\'s own number for the name; another port, and a name nobody declares, allow nothing',
    policies: [np('client-to-http', 'prod', { podSelector: sel({ app: 'client' }), policyTypes: ['Egress'], egress: [{ to: [{ podSelector: {} }], ports: [{ port: 'http' }, { port: 'nope' }] }] })],
    probes: [
      ['client', 'web', 8080, 'open'], ['client', 'web', 9090, 'closed'], ['client', 'web', 80, 'closed'],
      ['client', 'db', 9090, 'open'], ['client', 'db', 8080, 'closed'], ['client', 'db', 5432, 'closed'],
      ['client', 'devOther', 8080, 'closed'], ['client', 'ext', 8080, 'closed'],
      ['web', 'db', 5432, 'open'], ['devClient', 'web', 9090, 'open'],
    ],
  },
  {
    name: 'policyTypes [Egress] only: egress enforced, the ingress rules written beside it ignored',
    policies: [np('web-egress-only', 'prod', {
      podSelector: sel({ app: 'web' }), policyTypes: ['Egress'],
      ingress: [{ from: [{ podSelector: sel({ app: 'db' }) }] }],
      egress: [{ to: [{ podSelector: sel({ app: 'db' }) }], ports: [{ port: 5432 }] }],
    })],
    probes: [
      ['web', 'db', 5432, 'open'], ['web', 'db', 80, 'closed'], ['web', 'devOther', 80, 'closed'],
      ['client', 'web', 80, 'open'], ['devClient', 'web', 80, 'open'],
    ],
  },
  {
    name: 'empty podSelector: every pod of the namespace, from every pod of the namespace',
    policies: [np('prod-internal', 'prod', { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] })],
    probes: [
      ['client', 'web', 80, 'open'], ['web', 'db', 80, 'open'], ['db', 'client', 80, 'open'],
      ['devClient', 'web', 80, 'closed'], ['ext', 'web', 80, 'closed'], ['devClient', 'devOther', 80, 'open'],
    ],
  },
  {
    name: 'both directions on one pod',
    policies: [np('web-both', 'prod', {
      podSelector: sel({ app: 'web' }), policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [{ podSelector: sel({ app: 'client' }) }], ports: [{ port: 80 }] }],
      egress: [{ to: [{ podSelector: sel({ app: 'db' }) }], ports: [{ port: 5432 }] }],
    })],
    probes: [
      ['client', 'web', 80, 'open'], ['client', 'web', 81, 'closed'], ['devClient', 'web', 80, 'closed'],
      ['web', 'db', 5432, 'open'], ['web', 'db', 80, 'closed'], ['web', 'ext', 80, 'closed'], ['web', 'client', 80, 'closed'],
    ],
  },
];

/** A Pod of this node in the apiserver, with container ports. */
function podObject(name: string, namespace: string, app: string, ports: readonly { name: string; containerPort: number }[] = []): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels: { app } },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'localhost/none:never', ports }] },
  });
}

/** The outside: a namespace of this test behind a veth of the host, with one address inside the ipBlock and one in its except. */
function outside(c: Cleanup): { inside: Peer; excepted: Peer } {
  const ns = netns(c, 'npt-ext');
  const hostIf = `npe${uniq()}`;
  ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.name);
  c.teardown(() => {
    if (existsSync(`/sys/class/net/${hostIf}`)) ip('link', 'del', hostIf);
  });
  ip('addr', 'add', `${EXT.host}/24`, 'dev', hostIf);
  ip('link', 'set', hostIf, 'up');
  writeFileSync(`/proc/sys/net/ipv4/conf/${hostIf}/rp_filter`, '0');
  ip('-n', ns.name, 'link', 'set', 'lo', 'up');
  for (const a of [EXT.inside, EXT.excepted]) ip('-n', ns.name, 'addr', 'add', `${a}/24`, 'dev', 'eth0');
  ip('-n', ns.name, 'link', 'set', 'eth0', 'up');
  ip('-n', ns.name, 'route', 'add', 'default', 'via', EXT.host);
  const traffic = new TrafficAgent(ns.name);
  c.teardown(() => traffic.stop());
  return { inside: { ip: EXT.inside, traffic }, excepted: { ip: EXT.excepted, traffic } };
}

/** Replaces the NetworkPolicies of both namespaces with `policies`. */
async function applyOnly(cluster: Cluster, policies: readonly object[]): Promise<void> {
  for (const ns of ['prod', 'dev']) await kubectlOk(cluster, ['delete', 'networkpolicy', '--all', '-n', ns]);
  for (const p of policies) await kubectlOk(cluster, ['apply', '-f', '-'], JSON.stringify(p));
}

t.test('NetworkPolicy semantics on real packets', { skip, timeout: 600_000 }, async (t) => {
  const c = new Cleanup(t);
  const cluster = await startCluster(c);
  const kubeconfig = await agentKubeconfig(cluster, tempDir(c, 'k8s-netpol-creds'));
  const ap = agentProcess(c, 'k8s-netpol', POOL, [`--k8s-kubeconfig-path=${kubeconfig}`, `--k8s-node-name=${NODE}`]);
  for (const [ns, team] of [['prod', 'a'], ['dev', 'b']] as const) {
    await kubectlOk(cluster, ['create', 'namespace', ns]);
    await kubectlOk(cluster, ['label', 'namespace', ns, `team=${team}`]);
  }
  const pods: [PeerName, string, string, string, { name: string; containerPort: number }[]][] = [
    ['web', 'web', 'prod', 'web', [{ name: 'http', containerPort: 8080 }]],
    ['db', 'db', 'prod', 'db', [{ name: 'http', containerPort: 9090 }, { name: 'pg', containerPort: 5432 }]],
    ['client', 'client', 'prod', 'client', []],
    ['devClient', 'client', 'dev', 'client', []],
    ['devOther', 'other', 'dev', 'other', []],
  ];
  for (const [, name, ns, app, ports] of pods) await kubectlOk(cluster, ['create', '-f', '-'], podObject(name, ns, app, ports));

  const agent = ap.start();
  t.ok(await ap.up(agent), 'the agent serves its API', { log: agent.log().slice(-3000) });
  await until('the Kubernetes caches to sync', async () => (await ap.client.status()).kubernetes?.state === 'Ok', 90_000);
  const conf = { cniVersion: '1.0.0', name: 'cellium', type: 'cellium-cni', 'socket-path': ap.socketPath };
  const peers = {} as Record<PeerName, Peer>;
  for (const [key, name, ns] of pods) {
    const where = netns(c, `npt-${key.toLowerCase()}`);
    const add = await cni('ADD', { containerId: `npt-${key}`, netns: where.path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=${name}` }, conf);
    t.equal(add.code, 0, `CNI ADD of ${ns}/${name}`, { out: add.stdout, err: add.stderr, log: agent.log().slice(-2000) });
    const traffic = new TrafficAgent(where.name);
    c.teardown(() => traffic.stop());
    peers[key] = { ip: (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!, traffic };
  }
  const ext = outside(c);
  peers.ext = ext.inside;
  peers.extExcept = ext.excepted;

  const endpoints = await ap.client.listEndpoints();
  const web = endpoints.find((e) => e.status?.['external-identifiers']?.['k8s-pod-name'] === 'web');
  t.same(web?.status?.namedPorts, [{ name: 'http', port: 8080, protocol: 'TCP' }], 'the web pod\'s named port reached its endpoint');
  const cep = await until('web\'s CiliumEndpoint to carry its named ports', async () => {
    const got = await kubectlOk(cluster, ['get', 'ciliumendpoint', 'web', '-n', 'prod', '-o', 'json']);
    const status = (JSON.parse(got) as { status?: { 'named-ports'?: unknown[] } }).status;
    return status?.['named-ports'] ? status : undefined;
  }, 30_000);
  t.same(cep['named-ports'], [{ name: 'http', port: 8080, protocol: 'TCP' }], 'and its CiliumEndpoint (status.named-ports, for the other nodes)');

  for (const k of CASES) {
    await t.test(k.name, async (t) => {
      await applyOnly(cluster, k.policies);
      const names = k.policies.map((p) => (p as { metadata: { name: string } }).metadata.name).sort();
      const { revision } = await until(`the repository to hold exactly ${names.join(', ') || 'no NetworkPolicy'}`, async () => {
        const p = await ap.client.getPolicy([]);
        const rules = JSON.parse(p.policy) as { labels?: string[] }[];
        const held = rules.filter((r) => r.labels?.includes('k8s:io.cilium.k8s.policy.derived-from=NetworkPolicy'))
          .flatMap((r) => r.labels!.filter((l) => l.startsWith('k8s:io.cilium.k8s.policy.name=')).map((l) => l.slice(l.indexOf('=') + 1))).sort();
        return held.join(',') === names.join(',') ? { revision: p.revision } : undefined;
      }, 30_000);
      await until(`every endpoint to realize policy revision ${revision}`, async () => {
        const eps = await ap.client.listEndpoints();
        return eps.length === 5 && eps.every((e) => e.status?.state === 'ready' && (e.status.policy?.realized?.['policy-revision'] ?? 0) >= revision);
      }, 30_000);
      let got: string[] = [];
      const settled = await until('the probes to give the table\'s verdicts', async () => {
        got = [];
        for (const [from, to, port, want] of k.probes) {
          const open = await exchange('tcp', peers[from].traffic, peers[to].traffic, peers[from].ip, peers[to].ip, port, 600);
          if (open !== (want === 'open')) got.push(`${from} -> ${to}:${port} ${open ? 'open' : 'closed'}, want ${want}`);
        }
        return got.length === 0;
      }, 20_000).then(() => true, () => false);
      t.ok(settled, `every probe as the table says: ${k.probes.map(([f, to, p, w]) => `${f}->${to}:${p} ${w}`).join('; ')}`, { wrong: got, log: settled ? undefined : agent.log().slice(-3000) });
    });
  }

  await t.test('an ipBlock selects pods by address: inside cidr minus except on real packets; an identity with a pod outside is left out (fail closed)', async (t) => {
    const probe = (from: Peer, to: Peer, port = 80, ms = 600) => exchange('tcp', from.traffic, to.traffic, from.ip, to.ip, port, ms);
    const apply = async (policies: readonly object[], want: string, check: () => Promise<boolean>) => {
      await applyOnly(cluster, policies);
      await until(want, check, 30_000);
      t.pass(want);
    };
    // the upstream except-clause test's shape: a wide block around the pods, one pod's /32 excepted
    await apply([np('client-via-cidr', 'prod', { podSelector: sel({ app: 'client' }), policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '10.247.0.0/16', except: [`${peers.devOther.ip}/32`] } }] }] })],
      `client egress to 10.247.0.0/16 except devOther (${peers.devOther.ip}): devOther closed, web open`,
      async () => !(await probe(peers.client, peers.devOther)) && (await probe(peers.client, peers.web)));
    for (const to of ['web', 'db', 'devClient', 'ext', 'extExcept'] as const) t.ok(await probe(peers.client, peers[to]), `client -> ${to} (${peers[to].ip}, inside, not excepted) open`);
    t.notOk(await probe(peers.client, peers.devOther, 8080), 'client -> devOther on another port closed too');
    // the upstream allow-egress-in-CIDR test's shape: the block is one pod's /32
    await apply([np('client-via-cidr', 'prod', { podSelector: sel({ app: 'client' }), policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: `${peers.devOther.ip}/32` } }] }] })],
      'client egress to devOther/32 only: devOther open, web closed',
      async () => (await probe(peers.client, peers.devOther)) && !(await probe(peers.client, peers.web)));
    for (const to of ['db', 'devClient', 'ext'] as const) t.notOk(await probe(peers.client, peers[to]), `client -> ${to} closed`);
    // a pod of devOther's identity on another node, outside the block: the identity is no longer selected
    const devOtherIdentity = (await ap.client.listEndpoints()).find((e) => e.status?.['external-identifiers']?.['k8s-pod-name'] === 'other')?.status?.identity?.id;
    t.ok(devOtherIdentity, `devOther's identity (${devOtherIdentity})`);
    const remote = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumEndpoint', metadata: { name: 'other-remote', namespace: 'dev' },
      status: {
        id: 78, state: 'ready', identity: { id: devOtherIdentity, labels: [] }, networking: { addressing: [{ ipv4: '10.247.98.7' }], node: '10.247.98.1' },
        'external-identifiers': { 'k8s-namespace': 'dev', 'k8s-pod-name': 'other-remote' },
        policy: { ingress: { enforcing: false, state: 'non-enforcing' }, egress: { enforcing: false, state: 'non-enforcing' } },
      },
    };
    await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify(remote));
    await until('client -> devOther to close (a pod of its identity is outside the block)', async () => !(await probe(peers.client, peers.devOther)), 30_000);
    t.pass('an identity with one pod inside and one outside the block is not allowed by it');
    await kubectlOk(cluster, ['delete', 'ciliumendpoint', '-n', 'dev', 'other-remote']);
    await until('client -> devOther to open again (the outside pod gone)', () => probe(peers.client, peers.devOther), 30_000);
    t.pass('the outside pod gone: allowed again');
    // ingress: from the pod pool except web
    await apply([np('db-from-pool', 'prod', { podSelector: sel({ app: 'db' }), ingress: [{ from: [{ ipBlock: { cidr: POOL, except: [`${peers.web.ip}/32`] } }] }] })],
      `db ingress from ${POOL} except web: client open, web closed`,
      async () => (await probe(peers.client, peers.db)) && !(await probe(peers.web, peers.db)));
    t.ok(await probe(peers.devClient, peers.db), 'devClient -> db (inside the pool) open');
    t.notOk(await probe(peers.ext, peers.db), 'ext -> db (outside the pool) closed');
    await applyOnly(cluster, []);
  });

  await t.test('a named egress port follows the destination pods: added under the name it opens, removed it closes; a denied port never passes meanwhile', async (t) => {
    await applyOnly(cluster, [np('client-to-web-http', 'prod', { podSelector: sel({ app: 'client' }), policyTypes: ['Egress'], egress: [{ to: [{ podSelector: sel({ app: 'web' }) }], ports: [{ port: 'http' }] }] })]);
    const probe = (to: Peer, port: number, ms = 600) => exchange('tcp', peers.client.traffic, to.traffic, peers.client.ip, to.ip, port, ms);
    await until('client -> web:8080 open and web:8081 closed (web declares http=8080)', async () => (await probe(peers.web, 8080)) && !(await probe(peers.web, 8081)), 30_000);
    // all along: ports the name never stands for stay closed (web's 9090, db's 9090: db is no peer)
    const leaks: string[] = [];
    let probing = true;
    const watcher = (async () => {
      let rounds = 0;
      while (probing) {
        if (await probe(peers.web, 9090, 250)) leaks.push('client -> web:9090');
        if (await probe(peers.db, 9090, 250)) leaks.push('client -> db:9090');
        rounds++;
      }
      return rounds;
    })();

    // a second web pod (same labels, so the same identity) declares http=8081
    await kubectlOk(cluster, ['create', '-f', '-'], podObject('web-2', 'prod', 'web', [{ name: 'http', containerPort: 8081 }]));
    const where = netns(c, 'npt-web2');
    const args = 'IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-2';
    const add = await cni('ADD', { containerId: 'npt-web2', netns: where.path, args }, conf);
    t.equal(add.code, 0, 'CNI ADD of prod/web-2', { out: add.stdout, err: add.stderr, log: agent.log().slice(-2000) });
    const traffic = new TrafficAgent(where.name);
    c.teardown(() => traffic.stop());
    const web2: Peer = { ip: (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!, traffic };
    const began = performance.now();
    await until('client -> web-2:8081 to open (the name re-resolved)', () => probe(web2, 8081), 30_000);
    t.pass(`client -> web-2:8081 opened ${Math.round(performance.now() - began)} ms after the CNI ADD answered`);
    t.ok(await probe(peers.web, 8081), 'client -> web:8081 open too: the name stands for the union of the identity\'s pods (as in Cilium)');
    t.notOk(await probe(web2, 8082), 'client -> web-2:8082 closed: no pod\'s http');
    t.ok(await probe(peers.web, 8080), 'client -> web:8080 still open');

    // web-2 goes: 8081 is no longer anyone's http
    const del = await cni('DEL', { containerId: 'npt-web2', netns: where.path, args }, conf);
    t.equal(del.code, 0, 'CNI DEL of prod/web-2', { out: del.stdout, err: del.stderr });
    await kubectlOk(cluster, ['delete', 'pod', '-n', 'prod', 'web-2', '--wait=false']);
    await until('client -> web:8081 to close again (the name re-resolved without web-2)', async () => !(await probe(peers.web, 8081)), 30_000);
    t.ok(await probe(peers.web, 8080), 'client -> web:8080 still open');

    // a web pod of ANOTHER node, known by its CiliumEndpoint (as that node's agent writes it): http=8082
    const webIdentity = (await ap.client.listEndpoints()).find((e) => e.status?.['external-identifiers']?.['k8s-pod-name'] === 'web')?.status?.identity?.id;
    t.ok(webIdentity, `web's identity (${webIdentity})`);
    const remote = {
      apiVersion: 'cilium.io/v2', kind: 'CiliumEndpoint', metadata: { name: 'web-remote', namespace: 'prod' },
      status: {
        id: 77, state: 'ready', identity: { id: webIdentity, labels: [] }, networking: { addressing: [{ ipv4: '10.247.99.7' }], node: '10.247.99.1' },
        'external-identifiers': { 'k8s-namespace': 'prod', 'k8s-pod-name': 'web-remote' }, 'named-ports': [{ name: 'http', port: 8082, protocol: 'TCP' }],
        policy: { ingress: { enforcing: false, state: 'non-enforcing' }, egress: { enforcing: false, state: 'non-enforcing' } },
      },
    };
    await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify(remote));
    await until('client -> web:8082 to open (the remote CiliumEndpoint\'s http, same identity)', () => probe(peers.web, 8082), 30_000);
    t.pass('a remote CiliumEndpoint\'s named port reached the client\'s policy map');
    await kubectlOk(cluster, ['delete', 'ciliumendpoint', '-n', 'prod', 'web-remote']);
    await until('client -> web:8082 to close again (the remote CiliumEndpoint deleted)', async () => !(await probe(peers.web, 8082)), 30_000);
    t.ok(await probe(peers.web, 8080), 'client -> web:8080 still open');
    probing = false;
    const rounds = await watcher;
    t.ok(rounds > 0, `the denied ports were probed all along (${rounds} rounds)`);
    t.same(leaks, [], 'no denied packet passed while the name was re-resolved');
  });
});
