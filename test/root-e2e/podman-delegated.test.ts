// Privileged: podman (CNI backend) on a network whose conflist names host-local in its ipam
// section, against an agent with --ipam=delegated-plugin: the containers get host-local's
// addresses and ping each other; `podman rm -f` (DEL) frees the endpoint and host-local's address;
// the agent's pool is never used.
import t from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CNI_PLUGIN_TYPE, DEFAULT_CNI_BIN_DIR, DEFAULT_CNI_CONF_DIR } from '../../src/cli/commands/install-cni.js';
import { repoPath } from '../../src/api/repo-files.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IPAMToken } from '../../src/cells/ipam/index.js';
import { buildShim, startAgent, uniq } from './agent.js';
import { needs } from '../needs.js';

const run = promisify(execFile);
const SETUP = join(import.meta.dirname, 'podman-setup.sh');

function skipReason(): string | false {
  const why = needs('root', 'runs podman containers');
  if (why) return why;
  if (!existsSync('/usr/bin/podman')) return 'needs podman (scripts/packages.d/30-e2e.txt; setup.sh installs it as root)';
  if (!existsSync('/usr/lib/cni/host-local')) return 'needs /usr/lib/cni/host-local (containernetworking-plugins)';
  return false;
}

async function podman(...args: string[]): Promise<string> {
  return (await run('podman', args, { encoding: 'utf8' })).stdout.trim();
}

t.test('podman containers get host-local addresses through the agent', { skip: skipReason() }, async (t) => {
  buildShim();
  execFileSync('bash', [SETUP], { stdio: ['ignore', 'ignore', 'inherit'] });
  const net = `celdlg${uniq().slice(-6)}`;
  const names = [`dlg-a-${uniq()}`, `dlg-b-${uniq()}`];
  // teardowns run in order: containers (their DEL needs the shim and the agent), the files, the agent
  t.teardown(() => run('podman', ['rm', '-f', '-t', '0', ...names]).catch(() => undefined));
  const agent = await startAgent(t, '10.224.0.0/24', { config: { ipam: 'delegated-plugin' } });
  // The shim goes into /opt/cni/bin under a name of this test's own (podman finds plugins only
  // there): test/root-e2e/podman.test.ts installs and removes cellium-cni itself, maybe at the same time.
  const pluginType = `${CNI_PLUGIN_TYPE}-${net}`;
  const shim = join(DEFAULT_CNI_BIN_DIR, pluginType);
  mkdirSync(DEFAULT_CNI_BIN_DIR, { recursive: true });
  copyFileSync(repoPath('bin', CNI_PLUGIN_TYPE), shim);
  chmodSync(shim, 0o755);
  const dataDir = join(agent.dir, 'host-local');
  const conflist = join(DEFAULT_CNI_CONF_DIR, `90-${net}.conflist`);
  writeFileSync(conflist, JSON.stringify({
    cniVersion: '1.0.0',
    name: net,
    plugins: [{ type: pluginType, 'socket-path': agent.socketPath, ipam: { type: 'host-local', dataDir, ranges: [[{ subnet: '10.225.0.0/24' }]], routes: [{ dst: '0.0.0.0/0' }] } }],
  }));
  t.teardown(() => {
    rmSync(conflist, { force: true });
    rmSync(shim, { force: true });
  });
  const held = (): string[] => (existsSync(join(dataDir, net)) ? readdirSync(join(dataDir, net)).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)) : []);

  const ips: string[] = [];
  for (const name of names) {
    await podman('run', '-d', '--name', name, '--network', net, '--cap-add', 'NET_RAW', 'localhost/bb', 'sleep', '600');
    ips.push(await podman('inspect', '-f', `{{(index .NetworkSettings.Networks "${net}").IPAddress}}`, name));
  }
  for (const ip of ips) t.match(ip, /^10\.225\.0\.\d+$/, `${ip} comes from host-local`);
  t.same(held().sort(), [...ips].sort(), 'host-local holds them');
  t.same(agent.h.get(IPAMToken).status()[0]!.allocated, {}, "the agent's pool gave nothing");
  t.match(await podman('exec', names[0]!, 'ping', '-c1', '-W2', ips[1]!), /1 packets received/, 'a pings b');

  for (const name of names) await podman('rm', '-f', '-t', '0', name);
  t.same(held(), [], 'podman rm -f: host-local released the addresses');
  t.equal(agent.h.get(EndpointManagerToken).getEndpoints().length, 0, 'no endpoint left');
});
