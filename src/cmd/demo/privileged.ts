/**
 * The demo as root: the real path. Installs the CNI plugin, starts the agent on the BPF datapath,
 * creates two pods (network namespaces) through the real CNI shim, shows connectivity, imports a
 * policy, shows the drops (and the drop counters), deletes the policy, and removes everything.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_NAMESPACE, DEMO_POLICY } from './policy.js';
import { cli, must, run, startAgent, stopAgent, bins, type Narrator } from './runner.js';

/** A demo pod. */
interface Pod {
  readonly name: string;
  readonly netns: string;
  readonly containerId: string;
  ip?: string;
}

const BPF_ROOT = '/sys/fs/bpf/cellium-demo';
const TCP_PROBE = `const s=require('net').connect({host:process.argv[1],port:+process.argv[2],timeout:1500});` +
  `s.on('connect',()=>{console.log('connected to '+process.argv[1]+':'+process.argv[2]);s.destroy();process.exit(0)});` +
  `s.on('timeout',()=>{console.log('timed out (dropped)');process.exit(1)});s.on('error',e=>{console.log(e.code);process.exit(1)})`;
// A probe closes right after connecting: a reset on the server's side must not end the server.
const TCP_SERVER = `let n=0;for(const p of [80,81])require('net').createServer(c=>{c.on('error',()=>{});c.end('hello from the server\\n')}).listen(p,()=>{if(++n===2)console.log('ready')})`;

/** Runs the privileged story; throws when connectivity is not what the step expects. */
export async function privilegedDemo(n: Narrator): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-demo-'));
  const socket = join(dir, 'cellium.sock');
  const binDir = join(dir, 'cni/bin');
  const confDir = join(dir, 'cni/net.d');
  const pods: Pod[] = ['client', 'server'].map((name) => ({ name, netns: `cellium-demo-${name}`, containerId: randomBytes(32).toString('hex') }));
  let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
  const servers: { kill(): void }[] = [];
  try {
    n.step('Start the agent (BPF datapath) and install the CNI plugin');
    agent = await startAgent(n, ['--datapath-mode=bpf', '--bpf-lb-sock=false', `--bpf-root=${BPF_ROOT}`, `--state-dir=${dir}/state`, `--socket-path=${socket}`,
      `--cni-delete-queue-dir=${dir}/delete-queue`, '--ipv4-range=10.234.0.0/24'], socket);
    // the shim's call log goes to the demo's directory too (the default, /var/run/cellium/cellium-cni.log, would outlive the demo)
    const shimLog = join(dir, 'cellium-cni.log');
    must(n, [process.execPath, bins.cli, 'install-cni', '--cni-bin-dir', binDir, '--cni-conf-dir', confDir, '--socket-path', socket, '--cni-log-file', shimLog], { show: `cellium install-cni --cni-bin-dir ${binDir} --cni-conf-dir ${confDir} --socket-path ${socket} --cni-log-file ${shimLog}` });
    const conflist = JSON.parse(readFileSync(join(confDir, '05-cellium.conflist'), 'utf8')) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
    const netconf = JSON.stringify({ cniVersion: conflist.cniVersion, name: conflist.name, ...conflist.plugins[0] });

    n.step('Create two pods through the real CNI path (network namespace → cellium-cni ADD → agent)');
    for (const p of pods) {
      must(n, ['ip', 'netns', 'add', p.netns]);
      const r = must(n, [join(binDir, 'cellium-cni')], { input: netconf, env: cniEnv('ADD', p, binDir), show: `CNI_COMMAND=ADD CNI_NETNS=/var/run/netns/${p.netns} CNI_ARGS='K8S_POD_NAMESPACE=${DEMO_NAMESPACE};K8S_POD_NAME=${p.name}' cellium-cni < 05-cellium.conflist` });
      const result = JSON.parse(r.stdout) as { ips: { address: string }[] };
      p.ip = result.ips[0]!.address.split('/')[0];
      await cli(n, socket, ['endpoint', 'labels', `pod-name:${DEMO_NAMESPACE}/${p.name}`, '--add', `k8s:app=${p.name}`, '--wait']);
    }
    const [client, server] = pods as [Pod, Pod];
    await cli(n, socket, ['endpoint', 'list']);
    const srv = run(n, ['ip', 'netns', 'exec', server.netns, 'true'], { quiet: true });
    if (srv.code === 0) {
      const { spawn } = await import('node:child_process');
      const proc = spawn('ip', ['netns', 'exec', server.netns, process.execPath, '-e', TCP_SERVER], { stdio: ['ignore', 'pipe', 'ignore'] });
      servers.push(proc);
      // listening once it says so (a fixed wait lost the race on a busy machine: ECONNREFUSED)
      const ready = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 30_000);
        proc.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && (clearTimeout(timer), resolve(true)));
        proc.on('exit', () => (clearTimeout(timer), resolve(false)));
      });
      if (!ready) throw new Error(`the server pod's listener did not start within 30 s (ip netns exec ${server.netns} node)`);
      n.say(`server pod listens on ${server.ip}:80 and :81`);
    }
    const ping = (expect: boolean): void => check(n, ['ip', 'netns', 'exec', client.netns, 'ping', '-c', '1', '-W', '1', server.ip!], expect, 'ping');
    const tcp = (port: number, expect: boolean): void => check(n, ['ip', 'netns', 'exec', client.netns, process.execPath, '-e', TCP_PROBE, server.ip!, String(port)], expect, `tcp ${port}`, `client$ connect ${server.ip}:${port}`);

    n.step('No policy: the pods reach each other');
    ping(true);
    tcp(80, true);
    tcp(81, true);

    n.step('Import a policy: only app=client may reach app=server, on 80/TCP');
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, DEMO_POLICY);
    n.say(DEMO_POLICY.split('\n').join('\n    '));
    await cli(n, socket, ['policy', 'import', file, '--wait']);
    tcp(80, true);
    tcp(81, false);
    ping(false);
    n.say('the BPF program on the server pod\'s lxc interface dropped those packets; its drop counters:');
    await cli(n, socket, ['map', 'get', 'cellium_metrics']);

    n.step('Delete the policy: connectivity is back');
    await cli(n, socket, ['policy', 'delete', '--all', '--wait']);
    ping(true);
    tcp(81, true);
  } finally {
    n.step('Clean up everything the demo created');
    for (const s of servers) s.kill();
    for (const p of pods) {
      run(n, [join(binDir, 'cellium-cni')], { input: '', env: cniEnv('DEL', p, binDir), quiet: true });
      run(n, ['ip', 'netns', 'del', p.netns], { quiet: true });
    }
    if (agent) await stopAgent(n, agent);
    run(n, [process.execPath, bins.cli, 'install-cni', '--uninstall', '--cni-bin-dir', binDir, '--cni-conf-dir', confDir], { show: 'cellium install-cni --uninstall' });
    rmSync(BPF_ROOT, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
    n.say('removed the pods, their network namespaces, the CNI files, the pinned BPF objects and the state');
  }
}

/** The CNI environment of a call for a pod. */
function cniEnv(command: string, p: Pod, binDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CNI_COMMAND: command,
    CNI_CONTAINERID: p.containerId,
    CNI_NETNS: `/var/run/netns/${p.netns}`,
    CNI_IFNAME: 'eth0',
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${DEMO_NAMESPACE};K8S_POD_NAME=${p.name}`,
    CNI_PATH: binDir,
  };
}

/** Runs a connectivity probe and throws when its outcome is not the expected one. */
function check(n: Narrator, argv: string[], expectOk: boolean, what: string, show?: string): void {
  const r = run(n, argv, { show });
  if ((r.code === 0) !== expectOk) throw new Error(`${what}: expected ${expectOk ? 'success' : 'a drop'}, got exit ${r.code}: ${r.stdout}${r.stderr}`);
  n.say(expectOk ? `${what}: passes, as expected` : `${what}: dropped, as expected`);
}
