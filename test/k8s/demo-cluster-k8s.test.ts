// npm run demo:cluster -- --store=k8s as a test (root, the harness's apiserver, dist built): three
// nodes in network namespaces with their own agents and no etcd of their own; pod CIDRs given by
// the agent holding the Lease into CiliumNodes, pods' identities as CiliumIdentities, other nodes'
// pods from their CiliumEndpoints, a CiliumNetworkPolicy; cross-node TCP allowed and dropped by
// identity on real packets, a deleted pod leaving every ipcache, a deleted Node (its CiliumNode
// removed by Kubernetes' garbage collector, as the Node owns it) taking its route and its ipcache entries with it, and nothing left behind.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Narrator } from '../../src/cmd/demo/runner.js';
import { k8sSkip } from './cluster.js';

const built = existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js')) && existsSync(join(import.meta.dirname, '../../bin/cellium-cni'));
const skip = k8sSkip({ root: true }) || (!built ? 'dist/ or bin/cellium-cni not built: run npm run build' : false);

t.test('the 3-node cluster demo on the apiserver: pod CIDRs, identity policy across nodes, a pod and a node deleted, cleanup', { skip }, async (t) => {
  const { clusterDemo } = await import('../../src/cmd/demo/cluster.js');
  const text: string[] = [];
  const n: Narrator = { step: (s) => text.push(`== ${s}`), say: (s) => text.push(s), cmd: (l, o) => text.push(`$ ${l}`, o) };
  await clusterDemo(n, 'k8s');
  const all = text.join('\n');
  const step = (title: RegExp): string => {
    const i = text.findIndex((l) => l.startsWith('== ') && title.test(l));
    t.ok(i >= 0, `step ${title}`);
    const j = text.findIndex((l, k) => k > i && l.startsWith('== '));
    return text.slice(i, j < 0 ? undefined : j).join('\n');
  };
  t.notMatch(all, /cellium-agent [^\n]*--kvstore/, 'no agent has a kvstore');
  const agents = step(/One agent per node/);
  const cidrs = [...agents.matchAll(/^node-(\d)\s+10\.171\.0\.\1\s+\[(10\.172\.\d+\.0\/24)\]\s*$/gm)].map((m) => m[2]);
  t.equal(new Set(cidrs).size, 3, `three CiliumNodes, each with its own /24 of the pool: ${cidrs.join(', ')}`);
  t.match(agents, /default\/node-1 \(self\)\s+10\.171\.0\.1\s+10\.172\.\d+\.0\/24\s+local/, 'node list with a pod CIDR from the cluster pool');
  t.match(agents, /default\/node-2\s+10\.171\.0\.2\s+10\.172\.\d+\.0\/24\s+custom-resource/, 'other nodes learnt from their CiliumNodes');
  t.match(agents, /10\.172\.\d+\.0\/24 via 10\.171\.0\.2 dev eth0/, 'routes to the other nodes\' pod CIDRs');
  const pods = step(/A pod on each node/);
  t.match(pods, /10\.172\.\d+\.\d+\/32\s+\d+\s+10\.171\.0\.1\s+custom-resource\s+demo\/client/, 'the client (node-1) in node-2\'s ipcache from its CiliumEndpoint');
  t.match(pods, /10\.172\.\d+\.\d+\/32\s+\d+\s+10\.171\.0\.3\s+custom-resource\s+demo\/other/, 'the other pod (node-3) too');
  const traffic = step(/Cross-node traffic/);
  t.match(traffic, /client -> server:80 passes, as expected/);
  t.match(traffic, /client -> server:81 is dropped, as expected/);
  t.match(traffic, /other -> server:80 is dropped, as expected/);
  t.match(step(/Delete the client pod/), /demo\/server/, 'the ipcache listed after the client left');
  const gone = step(/Delete node-3/);
  t.match(gone, /kubectl delete node node-3/);
  t.notMatch(gone, /kubectl delete ciliumnode/, 'only the Node is deleted by hand');
  t.match(gone, /CiliumNode node-3 deleted by Kubernetes' garbage collector/, 'the CiliumNode goes with its owner, the Node');
  t.notMatch(gone.slice(gone.indexOf('cellium node list')), /node-3\s+10\.171/, 'node-1 does not list node-3 any more');
  t.match(gone, /node-3's route \(10\.172\.\d+\.0\/24\) and its ipcache entries \(10\.171\.0\.3, other 10\.172\.\d+\.\d+\) are gone from every other node/);
  t.match(all, /removed the pods/);
  t.notMatch(execFileSync('ip', ['-br', 'link'], { encoding: 'utf8' }), /cdemo-/, 'no bridge or veth left');
  t.notMatch(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }), /cellium-cdemo-/, 'no network namespace left');
  t.same(readdirSync('/sys/fs/bpf').filter((f) => f.startsWith('cellium-cdemo-')), [], 'no BPF root left');
  t.notMatch(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }), /cellium-cdemo-|apiserver\.sock/, 'no agent, relay or control plane left');
});
