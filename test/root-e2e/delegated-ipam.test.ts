// Privileged: --ipam=delegated-plugin through cnitool with Debian's host-local as the IPAM plugin:
// the pods get host-local's addresses and ping each other, CHECK and DEL reach host-local, a
// failing ADD after the IPAM ADD (its address clashes with another pod's endpoint) releases the
// address, a second DEL succeeds, a CNI GC (through the shim, CNI 1.1) that no longer lists a pod
// removes it and has host-local release its address (host-local 1.1 has no GC: an IPAM DEL), and
// the agent's pool is never touched.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../src/cli/main.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IPAMToken } from '../../src/cells/ipam/index.js';
import { IPAM_RECORDS_DIR, hostIfName } from '../../src/cells/cni-server/index.js';
import { buildShim, cni, netns, startAgent, uniq } from './agent.js';
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

  const pods = [netns(t, 'dl-a'), netns(t, 'dl-b'), netns(t, 'dl-g')];
  const ids = pods.map((_, i) => `dlg-${i}-${uniq()}`);
  const ips: string[] = [];
  for (const [i, ns] of pods.entries()) {
    const add = await cnitool(tool.path, 'add', 'dlg', ns.path, { ...env, containerId: ids[i], args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=dl;K8S_POD_NAME=pod-${i}-${uniq()}` });
    t.equal(add.code, 0, add.stderr || add.stdout);
    const res = JSON.parse(add.stdout) as { ips: Array<{ address: string; gateway: string }> };
    t.match(res.ips[0], { address: /^10\.223\.0\.\d+\/32$/, gateway: '10.223.0.1' }, "host-local's address and gateway");
    ips.push(res.ips[0]!.address.split('/')[0]!);
  }
  t.same(held(dataDir, 'dlg').sort(), [...ips].sort(), 'host-local holds all three');
  t.same(pool(), {}, "the agent's pool gave nothing");
  t.match(execFileSync('ip', ['netns', 'exec', pods[0]!.name, 'ping', '-c1', '-W2', ips[1]!], { encoding: 'utf8' }), /1 received/, 'the pods ping each other');
  const check = await cnitool(tool.path, 'check', 'dlg', pods[0]!.path, { ...env, containerId: ids[0] });
  t.equal(check.code, 0, `check passes (host-local CHECK included) ${check.stderr}`);

  const clash = netns(t, 'dl-c');
  const failed = await cnitool(tool.path, 'add', 'dup', clash.path, { ...env, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=dl;K8S_POD_NAME=clash-${uniq()}` });
  t.equal(failed.code, 1, 'the ADD fails after the IPAM ADD');
  t.match(failed.stderr + failed.stdout, /already used by endpoint/);
  t.same(held(join(agent.dir, 'host-local-dup'), 'dup'), [], 'the IPAM DEL released the address');

  // CNI GC as a CNI 1.1 runtime sends it: the third pod is no longer a valid attachment
  const plugin = { cniVersion: '1.1.0', name: 'dlg', ...conflist('dlg', dataDir).plugins[0] };
  const valid = ids.slice(0, 2).map((containerID) => ({ containerID, ifname: 'eth0' }));
  const gc = await cni('GC', { containerId: '' }, { ...plugin, 'cni.dev/valid-attachments': valid }, { CNI_PATH: env.binDirs.join(':') });
  t.same([gc.code, gc.stdout], [0, ''], `CNI GC through the shim ${gc.stderr}`);
  t.same(held(dataDir, 'dlg').sort(), ips.slice(0, 2).sort(), "host-local released the stale pod's address (an IPAM DEL: host-local has no GC)");
  t.equal(agent.h.get(EndpointManagerToken).getEndpoints().length, 2, 'its endpoint is gone, the valid ones stay');
  t.notOk(existsSync(join(agent.dir, 'state', IPAM_RECORDS_DIR, `${hostIfName(ids[2]!, 'eth0')}.json`)), 'and its IPAM record');
  t.throws(() => execFileSync('ip', ['link', 'show', hostIfName(ids[2]!, 'eth0')], { stdio: 'ignore' }), 'and its veth');
  const again = await cni('GC', { containerId: '' }, { ...plugin, 'cni.dev/valid-attachments': valid }, { CNI_PATH: env.binDirs.join(':') });
  t.same([again.code, held(dataDir, 'dlg').length], [0, 2], 'a second GC changes nothing');

  // an IPAM plugin that takes host-local's address and then prints garbage: a clear CNI error, and
  // the rollback's IPAM DEL has host-local release the address
  const wrapDir = join(agent.dir, 'wrap');
  mkdirSync(wrapDir);
  writeFileSync(join(wrapDir, 'garbage-ipam'), `#!/bin/sh\nout=$(${REF}/host-local)\nif [ "$CNI_COMMAND" = ADD ]; then echo 'ok {not json'; else printf '%s' "$out"; fi\n`, { mode: 0o755 });
  const garbageDir = join(agent.dir, 'host-local-garbage');
  const garbage = { ...conflist('garbage', garbageDir) };
  garbage.plugins[0]!.ipam.type = 'garbage-ipam';
  writeFileSync(join(confDir, '40-garbage.conflist'), JSON.stringify(garbage));
  const bad = await cnitool(tool.path, 'add', 'garbage', clash.path, { ...env, binDirs: [binDir, wrapDir, REF], args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=dl;K8S_POD_NAME=garbage-${uniq()}` });
  t.equal(bad.code, 1, 'the ADD fails');
  t.match(bad.stderr + bad.stdout, /IPAM plugin garbage-ipam ADD printed an unusable result/, 'naming the plugin and what it did');
  t.same(held(garbageDir, 'garbage'), [], 'host-local released the address it gave');

  for (const [i, ns] of pods.entries()) {
    for (const round of [1, 2]) {
      const del = await cnitool(tool.path, 'del', 'dlg', ns.path, { ...env, containerId: ids[i] });
      t.equal(del.code, 0, `del ${round} ${del.stderr}`);
    }
  }
  t.same(held(dataDir, 'dlg'), [], 'host-local released them all');
  t.equal(agent.h.get(EndpointManagerToken).getEndpoints().length, 0, 'no endpoint left');
  t.same(pool(), {}, "the agent's pool still untouched");
});
