// Privileged: cnitool (libcni, the only client here that sends CHECK) runs add, check and del on
// bare network namespaces against the agent, with the files `cellium install-cni` writes.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { runCli } from '../../src/cli/main.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IPAMToken } from '../../src/cells/ipam/index.js';
import { buildShim, netns, startAgent, uniq } from './agent.js';
import { buildCnitool, cnitool, skipUnlessCnitool } from './cnitool.js';

const skip = skipUnlessCnitool();

t.test('cnitool add, check, del on network namespaces', { skip }, async (t) => {
  buildShim();
  const tool = buildCnitool();
  t.teardown(tool.cleanup);
  const agent = await startAgent(t, '10.212.0.0/24');
  const binDir = join(agent.dir, 'bin');
  const confDir = join(agent.dir, 'net.d');
  const quiet = { stdout: () => undefined, stderr: (s: string) => t.comment(s), readFile: async () => '', env: {} };
  t.equal(await runCli(['install-cni', '--cni-bin-dir', binDir, '--cni-conf-dir', confDir, '--socket-path', agent.socketPath], quiet), 0, 'install-cni');
  const env = { confDir, binDirs: [binDir] };
  const pods = [netns(t, 'ct-a'), netns(t, 'ct-b')];
  const ips: string[] = [];
  for (const [i, ns] of pods.entries()) {
    const add = await cnitool(tool.path, 'add', 'cellium', ns.path, { ...env, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=ct;K8S_POD_NAME=pod-${i}-${uniq()}` });
    t.equal(add.code, 0, add.stderr);
    const res = JSON.parse(add.stdout) as { cniVersion: string; ips: Array<{ address: string }>; interfaces: Array<{ name: string; sandbox?: string }> };
    t.equal(res.cniVersion, '1.0.0');
    t.equal(res.interfaces[1]!.sandbox, ns.path);
    ips.push(res.ips[0]!.address.split('/')[0]!);
  }
  t.match(execFileSync('ip', ['netns', 'exec', pods[0]!.name, 'ping', '-c1', '-W5', ips[1]!], { encoding: 'utf8' }), /1 received/, 'the pods ping each other (the first packet: 5 s allow for a loaded machine)');

  const check = await cnitool(tool.path, 'check', 'cellium', pods[0]!.path, env);
  t.equal(check.code, 0, `check passes ${check.stderr}`);
  execFileSync('ip', ['-n', pods[0]!.name, 'addr', 'flush', 'dev', 'eth0']);
  const broken = await cnitool(tool.path, 'check', 'cellium', pods[0]!.path, env);
  t.equal(broken.code, 1, 'check fails once the address is gone');
  t.match(broken.stderr, /not on eth0/);

  for (const ns of pods) {
    const del = await cnitool(tool.path, 'del', 'cellium', ns.path, env);
    t.equal(del.code, 0, del.stderr);
    const again = await cnitool(tool.path, 'del', 'cellium', ns.path, env);
    t.equal(again.code, 0, `a second del succeeds ${again.stderr}`);
  }
  t.equal(agent.h.get(EndpointManagerToken).getEndpoints().length, 0, 'no endpoint left');
  t.same(agent.h.get(IPAMToken).status()[0]!.allocated, {}, 'no IP left');
});
