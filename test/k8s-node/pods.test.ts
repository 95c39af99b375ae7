// Real pods on a real node (root): `scripts/k8s.sh up --with-kubelet` runs containerd and kubelet
// on this machine and deploys Cellium from its image as the DaemonSet of deploy/. A Deployment of 3
// busybox httpd replicas and a ClusterIP Service:
// - every pod gets its address from Cellium's IPAM (the agent's allocations name the pod), a
//   CiliumEndpoint with that address and the identity of its labels, and a CiliumIdentity exists;
// - each pod reaches the others' addresses, and a client pod the Service's ClusterIP (load
//   balanced by Cellium: no kube-proxy runs);
// - `kubectl delete` of a pod: containerd's CNI DEL releases its address and its endpoint (the
//   CiliumEndpoint goes, the agent's allocation and endpoint go, the host side of its veth goes);
//   the ReplicaSet's new pod is networked like the others.
import t, { type Test } from 'tap';
import {
  agentCli, hostInterface, hostInterfaceExists, kubectlOk, netnsCount, nodeSkip, reaches, startNode, until, waitReady, webDeployment, webService,
  type Node, type PodInfo,
} from './node.js';

const skip = nodeSkip();
const started = Date.now();
t.setTimeout(600_000);
t.teardown(() => console.log(`# test/k8s-node/pods.test.ts: ${((Date.now() - started) / 1000).toFixed(1)} s`));

interface Ipam { allocations: Record<string, string>; pools: { cidr: string }[] }
interface Cep { metadata: { name: string }; status: { networking?: { addressing: { ipv4?: string }[] }; identity?: { id: number; labels?: string[] } } }

/** Whether IP is in the IPv4 CIDR. */
function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/') as [string, string];
  const n = (a: string): number => a.split('.').reduce((v, o) => v * 256 + Number(o), 0);
  const mask = Number(bits) === 0 ? 0 : 2 ** 32 - 2 ** (32 - Number(bits));
  return (n(ip) & mask) >>> 0 === (n(base) & mask) >>> 0;
}

async function checkNetworked(t: Test, n: Node, pods: readonly PodInfo[]): Promise<void> {
  const ipam = await agentCli<Ipam>(n, ['ipam']);
  const ceps = await n.c.kubectlJson<{ items: Cep[] }>(['get', 'ciliumendpoints', '-n', 'default']);
  for (const p of pods) {
    t.ok(ipam.pools.some((pool) => inCidr(p.ip, pool.cidr)), `${p.name}'s address ${p.ip} is in Cellium's pool ${ipam.pools.map((x) => x.cidr).join(',')}`);
    t.equal(ipam.allocations[p.ip], `default/${p.name}`, `Cellium's IPAM allocated ${p.ip} to ${p.name}`);
    const cep = ceps.items.find((c) => c.metadata.name === p.name);
    t.ok(cep, `${p.name} has a CiliumEndpoint`);
    t.same(cep?.status.networking?.addressing.map((a) => a.ipv4), [p.ip], `its CiliumEndpoint has ${p.ip}`);
    t.ok((cep?.status.identity?.id ?? 0) > 0, `its CiliumEndpoint has an identity (${cep?.status.identity?.id})`);
    if (cep?.status.identity) {
      const ident = await n.c.kubectlJson<{ metadata: { name: string } }>(['get', 'ciliumidentity', String(cep.status.identity.id)]);
      t.equal(ident.metadata.name, String(cep.status.identity.id), `the CiliumIdentity ${cep.status.identity.id} exists`);
    }
  }
}

t.test('a Deployment and a Service on a node networked by Cellium from its DaemonSet', { skip }, async (t) => {
  const n = await startNode(t);
  await kubectlOk(n.c, ['apply', '-f', '-'], webDeployment(n, 'web', 3));
  await kubectlOk(n.c, ['apply', '-f', '-'], webService('web'));
  await kubectlOk(n.c, ['apply', '-f', '-'], webDeployment(n, 'client', 1));
  const applied = Date.now();
  const pods = await waitReady(n, 'web', 3);
  t.comment(`3 pods Ready ${((Date.now() - applied) / 1000).toFixed(1)} s after kubectl apply`);
  t.equal(new Set(pods.map((p) => p.ip)).size, 3, 'three distinct addresses');
  await checkNetworked(t, n, pods);
  const [client] = await waitReady(n, 'client', 1);
  await checkNetworked(t, n, [client!]);
  t.equal(netnsCount(n), 4, 'containerd holds one network namespace per pod (the agent is host-network)');

  const svc = await n.c.kubectlJson<{ spec: { clusterIP: string } }>(['get', 'service', 'web']);
  for (const from of pods) {
    for (const to of pods) {
      if (to !== from) t.ok(await reaches(n, from.name, to.ip, 8080), `${from.name} reaches ${to.name} at ${to.ip}:8080`);
    }
  }
  // a client pod (not a backend: a backend reaching itself through its Service is hairpin
  // traffic, not this test's subject) reaches the ClusterIP on every try; the backend is chosen
  // per connection
  for (let i = 0; i < 6; i++) t.ok(await reaches(n, client.name, svc.spec.clusterIP, 80), `the client reaches the Service's ClusterIP ${svc.spec.clusterIP}:80 (try ${i + 1})`);

  // delete one pod: CNI DEL from containerd releases its address and its endpoint
  const victim = pods[1]!;
  const ifname = await hostInterface(n, victim.name);
  t.ok(hostInterfaceExists(ifname), `${victim.name}'s host interface ${ifname} exists`);
  await kubectlOk(n.c, ['delete', 'pod', victim.name, '--wait=true']);
  await until(`${victim.name}'s CiliumEndpoint gone`, async () => (await n.c.kubectl(['get', 'ciliumendpoint', victim.name])).code !== 0, 60_000);
  await until(`${victim.ip} released`, async () => !(victim.ip in (await agentCli<Ipam>(n, ['ipam'])).allocations), 60_000);
  const eps = await agentCli<{ status: { networking?: { addressing?: { ipv4?: string }[] } } }[]>(n, ['endpoint', 'list']);
  t.notOk(eps.some((e) => e.status.networking?.addressing?.some((a) => a.ipv4 === victim.ip)), `no endpoint of the agent has ${victim.ip} any more`);
  await until(`${ifname} gone`, () => !hostInterfaceExists(ifname), 30_000);
  t.pass(`${victim.name}'s host interface ${ifname} is gone`);
  const after = await waitReady(n, 'web', 3);
  const replacement = after.filter((p) => !pods.some((q) => q.name === p.name));
  t.equal(replacement.length, 1, 'the ReplicaSet made one new pod');
  await checkNetworked(t, n, after);
  t.ok(await reaches(n, replacement[0]!.name, pods[0]!.ip, 8080), 'the new pod reaches an old one');
  t.ok(await reaches(n, pods[0]!.name, replacement[0]!.ip, 8080), 'an old pod reaches the new one');
  const ipam = await agentCli<Ipam>(n, ['ipam']);
  t.same(Object.keys(ipam.allocations).sort(), [...after, client!].map((p) => p.ip).sort(), 'the agent holds exactly the running pods\' addresses');
  t.equal(netnsCount(n), 4, 'no network namespace left of the deleted pod');
});
