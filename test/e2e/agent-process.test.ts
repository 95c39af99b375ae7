// Privileged: the deployed shape. The real `cellium-agent` process (bin/cellium-agent.js, built
// dist/) serves the shim: STATUS once it is up, ADD (endpoint ready), CHECK, DEL, then SIGTERM.
// Runs once src/cells.ts wires the cni-server cell into the agent (its flags show in --help).
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from '../cni-server/helpers.js';
import { buildShim, ipJson, netns, uniq } from './agent.js';
import { runShim } from '../cni-shim/run-shim.js';

const BIN = join(import.meta.dirname, '../../bin/cellium-agent.js');

function skipReason(): string | false {
  if (process.getuid?.() !== 0) return 'needs root: the agent plumbs veths into network namespaces';
  const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
  if (!/--cni-delete-queue-dir=/.test(help.stdout ?? '')) return 'the built cellium-agent has no cni-server cell yet (src/cells.ts)';
  return false;
}

t.test('the cellium-agent process serves the shim', { skip: skipReason() }, async (t) => {
  buildShim();
  const dir = tempDir(t, 'agent-proc');
  const socketPath = join(dir, 'cellium.sock');
  const agent = spawn(process.execPath, [BIN, `--socket-path=${socketPath}`, `--state-dir=${join(dir, 'state')}`, `--cni-delete-queue-dir=${join(dir, 'q')}`, '--ipv4-range=10.216.0.0/24', '--datapath-mode=memory'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  agent.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((r) => agent.on('exit', r));
  t.teardown(() => {
    if (agent.exitCode === null) agent.kill('SIGKILL');
  });
  const netconf = (extra: Record<string, unknown> = {}, v = '1.0.0') => JSON.stringify({ cniVersion: v, name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath, ...extra });
  let up = false;
  for (let i = 0; i < 100 && !up; i++) {
    up = (await runShim({ CNI_COMMAND: 'STATUS' }, netconf({}, '1.1.0'))).code === 0;
    if (!up) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(up, up ? 'STATUS succeeds once the agent is up' : `the agent never became ready: ${stderr}`);
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
  agent.kill('SIGTERM');
  t.equal(await exited, 0, 'the agent stops cleanly on SIGTERM');
});
