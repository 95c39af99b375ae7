// Privileged: the deployed shape. The real `cellium-agent` process (bin/cellium-agent.js, built
// dist/) serves the shim: STATUS once it is up, ADD (endpoint ready), CHECK, DEL, then SIGTERM.
// Runs once src/cells.ts wires the cni-server cell into the agent (its flags show in --help).
import t from 'tap';
import { agentProcessSkip, startAgentProcess } from './agent-process.js';
import { buildShim, ipJson, netns, uniq } from './agent.js';
import { runShim } from '../cni-shim/run-shim.js';

t.test('the cellium-agent process serves the shim', { skip: agentProcessSkip('the agent plumbs veths into network namespaces') }, async (t) => {
  buildShim();
  const agent = await startAgentProcess(t, { pool: '10.216.0.0/24' });
  const { netconf, exited } = agent;
  t.ok(agent.up, agent.up ? 'STATUS succeeds once the agent is up' : `the agent never became ready: ${agent.stderr()}`);
  const ns = netns(t, 'ap');
  const env = { CNI_CONTAINERID: `proc-${uniq()}`, CNI_NETNS: ns.path, CNI_IFNAME: 'eth0', CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=proc;K8S_POD_NAME=p' };
  const add = await runShim({ ...env, CNI_COMMAND: 'ADD' }, netconf());
  t.equal(add.code, 0, add.stdout);
  const res = JSON.parse(add.stdout) as { ips: Array<{ address: string }> };
  t.match(res.ips[0]!.address, /^10\.216\.0\.\d+\/32$/);
  const check = await runShim({ ...env, CNI_COMMAND: 'CHECK' }, netconf({ prevResult: res }));
  t.same([check.code, check.stdout], [0, ''], 'CHECK');
  const del = await runShim({ ...env, CNI_COMMAND: 'DEL' }, netconf({ prevResult: res }));
  t.same([del.code, del.stdout], [0, ''], 'DEL');
  t.notOk(ipJson<{ ifname: string }>('-n', ns.name, 'link').some((l) => l.ifname === 'eth0'), 'the pod interface is gone');
  agent.proc.kill('SIGTERM');
  t.equal(await exited, 0, 'the agent stops cleanly on SIGTERM');
});
