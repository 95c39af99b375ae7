// npm run demo:cluster's story as a test (root, etcd, dist built): three nodes in network
// namespaces with their own agents on one etcd, pods through the CNI shim, cross-node TCP allowed
// and dropped by identity, a deleted pod leaving every ipcache, and nothing left behind.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Narrator } from '../../src/cmd/demo/runner.js';
import { needs } from '../needs.js';

const built = existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js')) && existsSync(join(import.meta.dirname, '../../bin/cellium-cni'));
const skip = needs('root', 'the demo makes network namespaces and a bridge and loads BPF programs')
  || (!built ? 'dist/ or bin/cellium-cni not built: run npm run build' : needs('etcd'));

t.test('the 3-node cluster demo: identity policy across nodes, propagation of deletes, cleanup', { skip }, async (t) => {
  const { clusterDemo } = await import('../../src/cmd/demo/cluster.js');
  const text: string[] = [];
  const n: Narrator = { step: (s) => text.push(`== ${s}`), say: (s) => text.push(s), cmd: (l, o) => text.push(`$ ${l}`, o) };
  await clusterDemo(n);
  const all = text.join('\n');
  t.match(all, /client -> server:80 passes, as expected/);
  t.match(all, /client -> server:81 is dropped, as expected/);
  t.match(all, /other -> server:80 is dropped, as expected/);
  t.match(all, /default\/node-1 \(self\)\s+10\.171\.0\.1\s+10\.172\.\d+\.0\/24\s+local/, 'node list with a pod CIDR from the cluster pool');
  t.match(all, /10\.172\.\d+\.0\/24 via 10\.171\.0\.\d dev eth0/, 'routes to the other nodes\' pod CIDRs');
  t.match(all, /KVStore:\s+Ok\s+etcd: 1\/1 connected/);
  t.match(all, /removed the pods/);
  const links = execFileSync('ip', ['-br', 'link'], { encoding: 'utf8' });
  t.notMatch(links, /cdemo-/, 'no bridge or veth left');
  t.notMatch(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }), /cellium-cdemo-/, 'no network namespace left');
  t.same(readdirSync('/sys/fs/bpf').filter((f) => f.startsWith('cellium-cdemo-')), [], 'no BPF root left');
});
