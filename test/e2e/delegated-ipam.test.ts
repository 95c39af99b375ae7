// Privileged: --ipam=delegated-plugin through cnitool with Debian's host-local as the IPAM plugin:
// the pods get host-local's addresses and ping each other, CHECK and DEL reach host-local, a
// failing ADD after the IPAM ADD (its address clashes with another pod's endpoint) releases the
// address, a second DEL succeeds, and the agent's pool is never touched.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../src/cli/main.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IPAMToken } from '../../src/cells/ipam/index.js';
import { buildShim, netns, startAgent, uniq } from './agent.js';
import { buildCnitool, cnitool, skipUnlessCnitool } from './cnitool.js';

const REF = '/usr/lib/cni';
const skip = skipUnlessCnitool() || (existsSync(join(REF, 'host-local')) ? false : `needs ${REF}/host-local (containernetworking-plugins)`);

/** The addresses host-local holds for a network (one file per address in its data directory). */
function held(dataDir: string, net: string): string[] {
  const dir = join(dataDir, net);
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)) : [];
}

t.test('cnitool with host-local as the delegated IPAM plugin', { skip }, async (t) => {
  buildShim();
  const tool = buildCnitool();
  t.teardown(tool.cleanup);
  const agent = await startAgent(t, '10.222.0.0/24', { config: { ipam: 'delegated-plugin' } });
  const binDir = join(agent.dir, 'bin');
  const confDir = join(agent.dir, 'net.d');
  const quiet = { stdout: () => undefined, stderr: (s: string) => t.comment(s), readFile: async () => '', env: {} };
  t.equal(await runCli(['install-cni', '--cni-bin-dir', binDir, '--cni-conf-dir', confDir, '--socket-path', agent.socketPath, '--no-cni-log-file'], quiet), 0, 'install-cni');
  const dataDir = join(agent.dir, 'host-local');
  const conflist = (name: string, dir: string) => ({
    cniVersion: '1.0.0',
    name,
    plugins: [{ type: 'cellium-cni', 'socket-path': agent.socketPath, ipam: { type: 'host-local', dataDir: dir, ranges: [[{ subnet: '10.223.0.0/24' }]], routes: [{ dst: '0.0.0.0/0' }] } }],
  });
  writeFileSync(join(confDir, '20-dlg.conflist'), JSON.stringify(conflist('dlg', dataDir)));
  // the same range with another data directory: its first address clashes with the first pod's
  writeFileSync(join(confDir, '30-dup.conflist'), JSON.stringify(conflist('dup', join(agent.dir, 'host-local-dup'))));
  const env = { confDir, binDirs: [binDir, REF] };
  const pool = () => agent.h.get(IPAMToken).status()[0]!.allocated;

  const pods = [netns(t, 'dl-a'), netns(t, 'dl-b')];
  const ips: string[] = [];
  for (const [i, ns] of pods.entries()) {
    const add = await cnitool(tool.path, 'add', 'dlg', ns.path, { ...env, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=dl;K8S_POD_NAME=pod-${i}-${uniq()}` });
    t.equal(add.code, 0, add.stderr || add.stdout);
    const res = JSON.parse(add.stdout) as { ips: Array<{ address: string; gateway: string }> };
    t.match(res.ips[0], { address: /^10\.223\.0\.\d+\/32$/, gateway: '10.223.0.1' }, "host-local's address and gateway");
    ips.push(res.ips[0]!.address.split('/')[0]!);
  }
  t.same(held(dataDir, 'dlg').sort(), [...ips].sort(), 'host-local holds both');
  t.same(pool(), {}, "the agent's pool gave nothing");
  t.match(execFileSync('ip', ['netns', 'exec', pods[0]!.name, 'ping', '-c1', '-W2', ips[1]!], { encoding: 'utf8' }), /1 received/, 'the pods ping each other');
  const check = await cnitool(tool.path, 'check', 'dlg', pods[0]!.path, env);
  t.equal(check.code, 0, `check passes (host-local CHECK included) ${check.stderr}`);

  const clash = netns(t, 'dl-c');
  const failed = await cnitool(tool.path, 'add', 'dup', clash.path, { ...env, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=dl;K8S_POD_NAME=clash-${uniq()}` });
  t.equal(failed.code, 1, 'the ADD fails after the IPAM ADD');
  t.match(failed.stderr + failed.stdout, /already used by endpoint/);
  t.same(held(join(agent.dir, 'host-local-dup'), 'dup'), [], 'the IPAM DEL released the address');

  for (const ns of pods) {
    for (const round of [1, 2]) {
      const del = await cnitool(tool.path, 'del', 'dlg', ns.path, env);
      t.equal(del.code, 0, `del ${round} ${del.stderr}`);
    }
  }
  t.same(held(dataDir, 'dlg'), [], 'host-local released both');
  t.equal(agent.h.get(EndpointManagerToken).getEndpoints().length, 0, 'no endpoint left');
  t.same(pool(), {}, "the agent's pool still untouched");
});
