// Privileged: the container image (npm run image) run the way deploy/daemonset.yaml runs it. The
// init container `cellium install-cni` writes the shim and the conflist into the CNI directories;
// the agent container (host network, privileged, bpffs, /var/run/cellium, /var/run/netns and the
// CNI directories mounted) serves the shim; two pods (network namespaces) are created through the
// installed shim called as a runtime calls it, and policy is enforced on their traffic by the BPF
// datapath inside the image: the allowed ping passes, the denied one is dropped and counted.
// Only the pods, this test's BPF root under /sys/fs/bpf and /var/run/netns are on the host's
// real paths; /var/run/cellium and the CNI directories are temporary directories.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createNetns, uniq } from '../root-netlink/netns.js';
import { cgroupPrograms, cgroupV2Mount } from '../../src/bpf/index.js';
import { commandLine, daemonSetPod, isSharedMount, podmanRunArgs, type ContainerSpec } from './daemonset.js';
import { needs } from '../needs.js';

const root = join(import.meta.dirname, '../..');
const has = (cmd: string, arg = '--version'): boolean => spawnSync(cmd, [arg], { stdio: 'ignore' }).status === 0;
const skip =
  needs('root', 'builds the image, runs a privileged container, creates network namespaces')
  || (!has('podman') ? 'podman missing (npm run setup as root installs it)'
  : !has('mmdebstrap') ? 'mmdebstrap missing (npm run setup as root installs it)'
  : false);

const POOL = '10.236.0.0/24';
const NAMESPACE = 'img';

/** Runs a command (bounded), returning status and output. */
function run(cmd: string, args: readonly string[], opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { input: opts.input, env: opts.env ?? process.env, encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000, maxBuffer: 16 << 20 });
  return { code: r.status, stdout: r.stdout ?? '', stderr: `${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

// the image build is cached: only a change of its inputs rebuilds it (a cold build takes minutes)
t.setTimeout(1_800_000);

t.test('the image runs as the DaemonSet runs it: install-cni, the agent, two pods, policy enforced', { skip }, async (t) => {
  const setup = run('bash', [join(root, 'test/root-e2e/podman-setup.sh')], { timeoutMs: 600_000 });
  t.equal(setup.code, 0, `podman setup\n${setup.stdout}${setup.stderr}`);
  const build = run('bash', [join(root, 'scripts/image.sh')], { timeoutMs: 1_500_000 });
  t.equal(build.code, 0, `npm run image\n${build.stdout}${build.stderr}`);
  if (build.code !== 0) return;
  t.comment(build.stdout.trim());
  const image = run('bash', [join(root, 'scripts/image.sh'), '--print-name']).stdout.trim();

  const pod = daemonSetPod();
  const init = pod.initContainers.find((c) => c.name === 'install-cni')!;
  const agentSpec = pod.containers.find((c) => c.name === 'cellium-agent')!;
  t.equal(init.image, image, 'the init container runs the image npm run image builds');
  t.equal(agentSpec.image, image, 'the agent container runs the image npm run image builds');

  const id = uniq();
  const dir = mkdtempSync(join(tmpdir(), 'cellium-image-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const run_ = join(dir, 'run');
  const cniBin = join(dir, 'cni-bin');
  const cniConf = join(dir, 'cni-conf');
  const noModules = join(dir, 'lib-modules'); // this machine kind has no /lib/modules
  for (const d of [run_, cniBin, cniConf, noModules]) mkdirSync(d);
  mkdirSync('/var/run/netns', { recursive: true });
  // the DaemonSet's cgroup v2 mount (socket load balancing): a cgroup of this test's own, never the
  // machine's root; without cgroup v2 here, socket load balancing is off
  const v2 = cgroupV2Mount();
  const testCgroup = v2 ? join(v2, `cellium-test-img-${id}`) : undefined;
  if (testCgroup) {
    mkdirSync(testCgroup);
    t.teardown(() => rmdirSync(testCgroup));
  }
  const hostPaths = {
    '/sys/fs/bpf': '/sys/fs/bpf', '/var/run/cellium': run_, '/var/run/netns': '/var/run/netns', '/opt/cni/bin': cniBin, '/etc/cni/net.d': cniConf,
    '/lib/modules': existsSync('/lib/modules') ? '/lib/modules' : noModules, '/sys/fs/cgroup': testCgroup ?? noModules,
  };
  const shared = new Set(['/sys/fs/bpf', '/var/run/netns', '/run/netns'].filter(isSharedMount));
  if (!shared.has('/sys/fs/bpf')) t.comment('/sys/fs/bpf is not a shared mount here: its bind carries no propagation (pins are on the same bpffs either way)');
  const podman = (name: string, c: ContainerSpec, detach: boolean, override: Record<string, string> = {}): string[] => [
    'run', ...(detach ? ['-d'] : ['--rm']), '--name', name, '--pull=never',
    ...podmanRunArgs(pod, c, hostPaths, { K8S_NODE_NAME: `test-node-${id}` }, shared),
    image, ...commandLine(c, override),
  ];

  // the init container
  const installed = run('podman', podman(`cellium-init-${id}`, init, false));
  t.equal(installed.code, 0, `install-cni in the image\n${installed.stdout}${installed.stderr}`);
  t.ok(existsSync(join(cniBin, 'cellium-cni')), 'the shim is in the CNI bin directory');
  const conflist = JSON.parse(readFileSync(join(cniConf, '05-cellium.conflist'), 'utf8')) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
  t.equal(conflist.plugins[0]!['socket-path'], '/var/run/cellium/cellium.sock', 'the conflist names the socket the DaemonSet shares with the host');

  // the agent container
  const bpfRoot = `/sys/fs/bpf/cellium-img-${id}`;
  const metricsPort = 20000 + (parseInt(id, 16) % 20000);
  const name = `cellium-agent-${id}`;
  t.teardown(() => {
    run('podman', ['rm', '-f', '-t', '5', name]);
    rmSync(bpfRoot, { recursive: true, force: true });
  });
  const started = run('podman', podman(name, agentSpec, true, { 'bpf-root': bpfRoot, 'prometheus-serve-addr': `127.0.0.1:${metricsPort}`, 'ipv4-range': POOL, ...(testCgroup ? {} : { 'bpf-lb-sock': 'false' }) }));
  t.equal(started.code, 0, `podman run the agent\n${started.stderr}`);
  if (started.code !== 0) return;
  const probe = agentSpec.readinessProbe?.exec?.command ?? ['cellium', 'status', '-o', 'json'];
  let ready: ReturnType<typeof run> | undefined;
  for (let i = 0; i < 120; i++) {
    const r = run('podman', ['exec', name, ...probe]);
    if (r.code === 0) {
      ready = r;
      break;
    }
    if (run('podman', ['inspect', '--format', '{{.State.Running}}', name]).stdout.trim() !== 'true') break;
    await sleep(500);
  }
  t.ok(ready, `the readiness probe (${probe.join(' ')}) passes\n${run('podman', ['logs', '--tail', '30', name]).stderr}`);
  if (!ready) return;
  const status = JSON.parse(ready.stdout) as Record<string, unknown>;
  t.equal(status['cellium-datapath'], 'bpf', 'the BPF datapath runs inside the image');
  t.equal((status.cilium as { state: string }).state, 'Ok');
  t.ok(existsSync(join(bpfRoot)), 'maps are pinned on the host bpffs');
  if (testCgroup) t.equal(cgroupPrograms(testCgroup, 'connect4').length, 1, 'socket load balancing attached at the cgroup the DaemonSet mounts');
  const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text(), (e: Error) => e.message);
  t.match(metrics, /^cellium_endpoint\b/m, 'Prometheus metrics on the host network');
  const cli = (args: string[], input?: string) => run('podman', ['exec', ...(input === undefined ? [] : ['-i']), name, 'cellium', ...args], { input });

  // two pods through the installed shim, called as a runtime calls it
  const host = { ...conflist.plugins[0], 'socket-path': join(run_, 'cellium.sock') }; // the same socket, seen from the host
  const netconf = JSON.stringify({ cniVersion: conflist.cniVersion, name: conflist.name, ...host });
  const pods = ['client', 'server'].map((app) => {
    const ns = createNetns(`img-${app.slice(0, 3)}-${id}`);
    const containerId = randomBytes(32).toString('hex');
    const env = (command: string): NodeJS.ProcessEnv => ({
      PATH: process.env.PATH, CNI_COMMAND: command, CNI_CONTAINERID: containerId, CNI_NETNS: ns.path, CNI_IFNAME: 'eth0', CNI_PATH: cniBin,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NAMESPACE};K8S_POD_NAME=${app}-${id}`,
    });
    t.teardown(() => {
      run(join(cniBin, 'cellium-cni'), [], { input: netconf, env: env('DEL') });
      ns.remove();
    });
    return { app, ns, env, ip: '' };
  });
  for (const p of pods) {
    const add = run(join(cniBin, 'cellium-cni'), [], { input: netconf, env: p.env('ADD') });
    t.equal(add.code, 0, `CNI ADD ${p.app}\n${add.stdout}${add.stderr}`);
    if (add.code !== 0) return;
    p.ip = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    const labels = cli(['endpoint', 'labels', `pod-name:${NAMESPACE}/${p.app}-${id}`, '--add', `k8s:app=${p.app}`, '--wait']);
    t.equal(labels.code, 0, `label ${p.app}\n${labels.stderr}`);
  }
  const [client, server] = pods as [(typeof pods)[0], (typeof pods)[0]];
  const ping = (): boolean => run('ip', ['netns', 'exec', client.ns.name, 'ping', '-c', '1', '-W', '1', server.ip]).code === 0;
  t.ok(ping(), 'no policy: the client pings the server');

  const policy = (from: string) => JSON.stringify([{
    endpointSelector: { matchLabels: { 'k8s:app': 'server', 'k8s:io.kubernetes.pod.namespace': NAMESPACE } },
    ingress: [{ fromEndpoints: [{ matchLabels: { 'k8s:app': from, 'k8s:io.kubernetes.pod.namespace': NAMESPACE } }] }],
    labels: [`k8s:policy=image-e2e-${id}`],
  }]);
  const allow = cli(['policy', 'import', '-', '--wait'], policy('client'));
  t.equal(allow.code, 0, allow.stderr);
  t.ok(ping(), 'a policy allowing app=client: the ping passes');
  const before = cli(['map', 'get', 'cellium_metrics', '-o', 'json']);
  const deny = cli(['policy', 'import', '-', '--wait'], policy('nobody'));
  t.equal(deny.code, 0, deny.stderr);
  t.notOk(ping(), 'a policy allowing only app=nobody: the ping is dropped');
  const after = cli(['map', 'get', 'cellium_metrics', '-o', 'json']);
  const dropped = (r: ReturnType<typeof run>): number => {
    const entry = (JSON.parse(r.stdout) as { cache?: { key?: string; value?: string }[] }).cache?.find((e) => e.key === 'policy');
    return Number(/packets=(\d+)/.exec(entry?.value ?? '')?.[1] ?? NaN);
  };
  t.ok(dropped(after) > dropped(before), `the BPF program counted the drop (${dropped(before)} -> ${dropped(after)})`);

  // the agent stops cleanly on the kubelet's SIGTERM
  const stop = spawn('podman', ['stop', '-t', '30', name], { stdio: 'ignore' });
  await new Promise((r) => stop.on('exit', r));
  t.equal(run('podman', ['inspect', '--format', '{{.State.ExitCode}}', name]).stdout.trim(), '0', 'exit 0 on SIGTERM');
});
