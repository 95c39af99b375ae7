// Privileged: in the agent's hive the BPF map reconcilers run as hive jobs, one per table
// (datapath-bpf: reconcile-cellium_lxc, …_ipcache, …_policy; loadbalancer: reconcile-lb-frontends),
// listed with the hive's jobs and each
// with its health scope in the health tree reporting its table's state after every round.
import t from 'tap';
import { HealthTreeToken, type HealthNode } from '../../src/hive/index.js';
import { Cleanup, allocatePod, bpfRoot, endpointRequest, skipReason, startBpfAgent, until } from './fixtures.js';

const POOL = '10.249.0.0/24';

/** The health node of `name` anywhere in the tree. */
function findNode(n: HealthNode, name: string): HealthNode | undefined {
  if (n.name === name) return n;
  for (const c of n.children) {
    const f = findNode(c, name);
    if (f) return f;
  }
  return undefined;
}

t.test('the BPF map reconcilers are hive jobs with a health scope each', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL);
  const jobs = agent.h.hive.jobs();
  for (const table of ['cellium_lxc', 'cellium_ipcache', 'cellium_policy']) {
    t.ok(jobs.includes(`datapath-plane/datapath-bpf: reconcile-${table}`), `datapath-plane/datapath-bpf: reconcile-${table} is one of the hive's jobs`);
  }
  t.ok(jobs.includes('controlplane/loadbalancer: reconcile-lb-frontends'), 'so is the loadbalancer\'s reconciler of frontends into the LB maps');
  const tree = agent.h.get(HealthTreeToken);
  t.match(findNode(tree.snapshot(), 'job-reconcile-lb-frontends')?.message, /: 0\/0 done$/, 'with its table in its health scope');
  const pod = await allocatePod(c, agent.client, 'rj');
  const ep = await agent.client.createEndpoint(0, endpointRequest(pod, ['k8s:app=rj']));
  t.ok(ep.id > 0, `endpoint ${ep.id} created`);
  const lxcDone = await until(() => /^cellium_lxc: 1\/1 done$/.test(findNode(tree.snapshot(), 'job-reconcile-cellium_lxc')?.message ?? ''), 5000);
  const lxc = findNode(tree.snapshot(), 'job-reconcile-cellium_lxc');
  t.ok(lxcDone, `the lxc job reports its table: ${lxc?.message}`);
  t.equal(lxc?.level, 'ok');
  const ipc = findNode(tree.snapshot(), 'job-reconcile-cellium_ipcache');
  const m = /^cellium_ipcache: (\d+)\/(\d+) done$/.exec(ipc?.message ?? '');
  t.ok(m && m[1] === m[2] && Number(m[1]) >= 2, `the ipcache job: the host's addresses and the pod's written (${ipc?.message})`);
  const pol = findNode(tree.snapshot(), 'job-reconcile-cellium_policy');
  t.match(pol?.message, /^cellium_policy: \d+\/\d+ done$/, `the policy job: ${pol?.message}`);
  await agent.client.deleteEndpoint(ep.id);
  t.ok(await until(() => findNode(tree.snapshot(), 'job-reconcile-cellium_lxc')?.message === 'cellium_lxc: 0/0 done', 5000), 'after the delete the lxc job reports an empty table');
});
