/**
 * `npm run demo:cluster` (root): three nodes on one machine sharing identities, the ipcache and
 * their pod CIDRs through a real etcd, or with `--store=k8s` through a real apiserver (the
 * harness's control plane; CiliumNodes, CiliumEndpoints, CiliumIdentities, a CiliumNetworkPolicy:
 * Cilium's CRD mode, no etcd for the agents). Each node is a network namespace with its own
 * `cellium-agent` (BPF datapath, its own BPF root, state and socket; entered with `nsenter --net`
 * so the BPF filesystem stays in view), joined by an underlay bridge that etcd listens on. Pods are
 * created on each node through the CNI shim; the demo shows the same identity on every node,
 * cross-node TCP allowed and dropped by identity-based policy, and a deleted pod leaving every
 * node's ipcache (with `--store=k8s` also a node deleted: its routes and ipcache entries leave the
 * other nodes), then removes everything.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../../hive/index.js';
import { nodeObject, podObject, startDemoK8s, waitFor, type DemoK8s } from './cluster-k8s.js';
import { DEMO_NAMESPACE, DEMO_POLICY } from './policy.js';
import { bins, cli, must, run, startAgent, stopAgent, type Narrator } from './runner.js';

const BRIDGE = 'cdemo-ul';
const UNDERLAY = '10.171.0';
const ETCD_IP = `${UNDERLAY}.254`;
const POOL = '10.172.0.0/16';
const TCP_PROBE = `const s=require('net').connect({host:process.argv[1],port:+process.argv[2],timeout:1500});` +
  `s.on('connect',()=>{console.log('connected to '+process.argv[1]+':'+process.argv[2]);s.destroy();process.exit(0)});` +
  `s.on('timeout',()=>{console.log('timed out (dropped)');process.exit(1)});s.on('error',e=>{console.log(e.code);process.exit(1)})`;
const TCP_SERVER = `for(const p of [80,81])require('net').createServer(c=>{c.on('error',()=>{});c.end('hello from the server\\n')}).listen(p)`;

interface Node {
  readonly name: string;
  readonly netns: string;
  readonly ip: string;
  readonly dir: string;
  readonly socket: string;
  readonly bpfRoot: string;
  netconf?: string;
  agent?: ChildProcess;
}

interface Pod {
  readonly name: string;
  readonly app: string;
  readonly node: Node;
  readonly netns: string;
  readonly containerId: string;
  ip?: string;
}

/** Where the cluster's state lives: etcd (kvstore mode), or the apiserver (Cilium's CRD mode). */
export type DemoStore = 'etcd' | 'k8s';

/** Runs the cluster story; throws when a step's outcome is not the expected one. */
export async function clusterDemo(n: Narrator, store: DemoStore = 'etcd'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cdemo-'));
  const tag = randomBytes(2).toString('hex');
  const nodes: Node[] = [1, 2, 3].map((i) => ({
    name: `node-${i}`, netns: `cellium-cdemo-n${i}`, ip: `${UNDERLAY}.${i}`, dir: join(dir, `node-${i}`),
    socket: join(dir, `node-${i}`, 'cellium.sock'), bpfRoot: `/sys/fs/bpf/cellium-cdemo-${tag}-n${i}`,
  }));
  const pods: Pod[] = [
    { name: 'client', app: 'client', node: nodes[0]! },
    { name: 'server', app: 'server', node: nodes[1]! },
    { name: 'other', app: 'other', node: nodes[2]! },
  ].map((p) => ({ ...p, netns: `cellium-cdemo-${p.name}`, containerId: randomBytes(32).toString('hex') }));
  let etcd: ChildProcess | undefined;
  let k8s: DemoK8s | undefined;
  const servers: ChildProcess[] = [];
  try {
    n.step('The underlay: a bridge, and three nodes (network namespaces) on it');
    // what a killed earlier run may have left (same names): removed first
    for (const [i, node] of nodes.entries()) {
      run(n, ['ip', 'link', 'del', `cdemo-n${i + 1}`], { quiet: true });
      run(n, ['ip', 'netns', 'del', node.netns], { quiet: true });
    }
    for (const p of pods) run(n, ['ip', 'netns', 'del', p.netns], { quiet: true });
    run(n, ['ip', 'link', 'del', BRIDGE], { quiet: true });
    must(n, ['ip', 'link', 'add', BRIDGE, 'type', 'bridge']);
    must(n, ['ip', 'addr', 'add', `${ETCD_IP}/24`, 'dev', BRIDGE]);
    must(n, ['ip', 'link', 'set', BRIDGE, 'up']);
    for (const [i, node] of nodes.entries()) {
      mkdirSync(node.dir, { recursive: true });
      must(n, ['ip', 'netns', 'add', node.netns]);
      must(n, ['ip', 'link', 'add', `cdemo-n${i + 1}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', node.netns]);
      must(n, ['ip', 'link', 'set', `cdemo-n${i + 1}`, 'master', BRIDGE, 'up']);
      must(n, ['ip', '-n', node.netns, 'addr', 'add', `${node.ip}/24`, 'dev', 'eth0']);
      must(n, ['ip', '-n', node.netns, 'link', 'set', 'eth0', 'up']);
      must(n, ['ip', '-n', node.netns, 'link', 'set', 'lo', 'up']);
      for (const k of ['all', 'default', 'eth0']) must(n, ['ip', 'netns', 'exec', node.netns, 'sysctl', '-qw', `net.ipv4.conf.${k}.rp_filter=0`]);
    }

    let storeFlags: (node: Node) => string[];
    if (store === 'etcd') {
      n.step(`etcd on the underlay (${ETCD_IP}:2379)`);
      const etcdData = join(dir, 'etcd');
      etcd = spawn('etcd', ['--name', 'cdemo', '--data-dir', etcdData, '--listen-client-urls', `http://${ETCD_IP}:2379`, '--advertise-client-urls', `http://${ETCD_IP}:2379`,
        '--listen-peer-urls', `http://${ETCD_IP}:2380`, '--initial-advertise-peer-urls', `http://${ETCD_IP}:2380`, '--initial-cluster', `cdemo=http://${ETCD_IP}:2380`,
        '--log-level', 'error', '--logger', 'zap'], { stdio: 'ignore' });
      n.cmd(`etcd --data-dir ${etcdData} --listen-client-urls http://${ETCD_IP}:2379 … &`, '');
      const etcdConfig = join(dir, 'etcd.yaml');
      writeFileSync(etcdConfig, `endpoints:\n- http://${ETCD_IP}:2379\n`);
      n.say(`${etcdConfig}: endpoints: [http://${ETCD_IP}:2379]`);
      storeFlags = () => ['--kvstore=etcd', `--kvstore-opt=etcd.config=${etcdConfig}`, '--kvstore-lease-ttl=30s'];
    } else {
      n.step('A Kubernetes control plane (the harness: etcd, kube-apiserver, controllers on the host\'s loopback); no etcd for the agents');
      k8s = await startDemoK8s(n, dir);
      const kc = k8s;
      for (const node of nodes) {
        await kc.relayInto(node.netns);
        if (kc.kubectl(['create', '-f', '-'], { input: nodeObject(node.name, node.ip), show: `kubectl create node ${node.name}  # no kubelet: the node is a network namespace` }).code !== 0) throw new Error(`creating Node ${node.name} failed`);
      }
      storeFlags = (node) => [`--k8s-kubeconfig-path=${kc.agentKubeconfig}`, `--k8s-node-name=${node.name}`];
    }

    n.step(store === 'etcd' ? 'One agent per node: BPF datapath, pod CIDRs from the cluster pool, routes to the other nodes'
      : 'One agent per node: BPF datapath, pod CIDRs given from the cluster pool by the agent holding the Lease (CiliumNode spec.ipam.podCIDRs), routes to the other nodes');
    for (const node of nodes) {
      const binDir = join(node.dir, 'cni/bin');
      const confDir = join(node.dir, 'cni/net.d');
      node.agent = await startAgent(n, [
        '--datapath-mode=bpf', `--bpf-root=${node.bpfRoot}`, `--state-dir=${node.dir}/state`, `--socket-path=${node.socket}`, `--cni-delete-queue-dir=${node.dir}/delete-queue`,
        ...storeFlags(node), `--node-name=${node.name}`, `--node-ip=${node.ip}`,
        `--cluster-pool-ipv4-cidr=${POOL}`, '--cluster-pool-ipv4-mask-size=24', '--ipv6-range=', '--auto-direct-node-routes',
        // the nodes are network namespaces of one machine: no socket programs on its root cgroup
        '--bpf-lb-sock=false',
      ], node.socket, ['nsenter', `--net=/var/run/netns/${node.netns}`]);
      must(n, [process.execPath, bins.cli, 'install-cni', '--cni-bin-dir', binDir, '--cni-conf-dir', confDir, '--socket-path', node.socket], { show: `cellium install-cni --cni-bin-dir ${binDir} --cni-conf-dir ${confDir} --socket-path ${node.socket}` });
      const conflist = JSON.parse(readFileSync(join(confDir, '05-cellium.conflist'), 'utf8')) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
      node.netconf = JSON.stringify({ cniVersion: conflist.cniVersion, name: conflist.name, ...conflist.plugins[0] });
    }
    await waitFor('every agent to know the three nodes', async () => {
      for (const node of nodes) if (((await cli(n, node.socket, ['-o', 'json', 'node', 'list'], true)).stdout.match(/"name"/g) ?? []).length < 3) return false;
      return true;
    });
    await cli(n, nodes[0]!.socket, ['status']);
    await cli(n, nodes[0]!.socket, ['node', 'list']);
    must(n, ['ip', '-n', nodes[0]!.netns, 'route', 'show'], { show: `ip -n ${nodes[0]!.netns} route show   # routes to the other nodes' pod CIDRs` });
    if (k8s) k8s.kubectl(['get', 'ciliumnodes', '-o', 'custom-columns=NAME:.metadata.name,INTERNALIP:.spec.addresses[0].ip,PODCIDRS:.spec.ipam.podCIDRs']);

    n.step('The policy on every node: only app=client may reach app=server, on 80/TCP');
    const policyFile = join(dir, 'policy.yaml');
    writeFileSync(policyFile, DEMO_POLICY);
    n.say(DEMO_POLICY.split('\n').join('\n    '));
    if (k8s) {
      if (k8s.kubectl(['apply', '-f', policyFile]).code !== 0) throw new Error('kubectl apply of the CiliumNetworkPolicy failed');
      await waitFor('every agent to have the CiliumNetworkPolicy', async () => {
        for (const node of nodes) if (!(await cli(n, node.socket, ['-o', 'json', 'policy', 'get'], true)).stdout.includes('server-allows-client-on-80')) return false;
        return true;
      });
    } else {
      for (const node of nodes) await cli(n, node.socket, ['policy', 'import', policyFile, '--wait']);
    }

    n.step('A pod on each node through the CNI shim: client (node-1), server (node-2), other (node-3)');
    for (const p of pods) {
      if (k8s && k8s.kubectl(['create', '-f', '-'], { input: podObject(p.name, p.app, p.node.name), show: `kubectl create pod ${DEMO_NAMESPACE}/${p.name} (app=${p.app}, nodeName ${p.node.name})` }).code !== 0) throw new Error(`creating Pod ${p.name} failed`);
      must(n, ['ip', 'netns', 'add', p.netns]);
      const r = must(n, [join(p.node.dir, 'cni/bin/cellium-cni')], { input: p.node.netconf, env: cniEnv('ADD', p), show: `CNI_COMMAND=ADD CNI_NETNS=/var/run/netns/${p.netns} CNI_ARGS='K8S_POD_NAMESPACE=${DEMO_NAMESPACE};K8S_POD_NAME=${p.name}' cellium-cni  # on ${p.node.name}` });
      p.ip = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0];
      // with Kubernetes the endpoint's labels come from its Pod
      if (!k8s) await cli(n, p.node.socket, ['endpoint', 'labels', `pod-name:${DEMO_NAMESPACE}/${p.name}`, '--add', `k8s:app=${p.app}`, '--wait']);
    }
    const [client, server, other] = pods as [Pod, Pod, Pod];
    servers.push(spawn('ip', ['netns', 'exec', server.netns, process.execPath, '-e', TCP_SERVER], { stdio: 'ignore' }));
    await waitFor('the server to listen', async () => ['80', '81'].every((port) => run(n, ['ip', 'netns', 'exec', server.netns, 'ss', '-Hltn', `sport = :${port}`], { quiet: true }).stdout.trim() !== ''));
    n.say(`server pod listens on ${server.ip}:80 and :81`);
    await waitFor('node-2 to know every pod with its identity', async () => {
      const entries = JSON.parse((await cli(n, nodes[1]!.socket, ['-o', 'json', 'ip', 'list'], true)).stdout) as { cidr: string; identity: number }[];
      for (const p of pods) {
        const ep = JSON.parse((await cli(n, p.node.socket, ['-o', 'json', 'endpoint', 'get', `pod-name:${DEMO_NAMESPACE}/${p.name}`], true)).stdout) as { status?: { identity?: { id?: number } } };
        if (!entries.some((e) => e.cidr === `${p.ip}/32` && e.identity === ep.status?.identity?.id)) return false;
      }
      return true;
    });
    await cli(n, nodes[1]!.socket, ['ip', 'list']);
    n.say(`the same labels have the same identity on every node (identities live in ${k8s ? 'the apiserver as CiliumIdentities' : 'etcd'}):`);
    await cli(n, nodes[2]!.socket, ['identity', 'list', 'k8s:app=client']);

    n.step('Cross-node traffic, decided by identity on the server\'s node');
    tcp(n, client, server, 80, true);
    tcp(n, client, server, 81, false);
    tcp(n, other, server, 80, false);

    n.step('Delete the client pod: its entry leaves every node\'s ipcache');
    must(n, [join(client.node.dir, 'cni/bin/cellium-cni')], { input: client.node.netconf, env: cniEnv('DEL', client), show: `CNI_COMMAND=DEL … cellium-cni  # client on ${client.node.name}` });
    await waitFor('node-2 and node-3 to drop the client', async () => {
      for (const node of nodes.slice(1)) if ((await cli(n, node.socket, ['ip', 'list'], true)).stdout.includes(`${client.ip}/32`)) return false;
      return true;
    });
    await cli(n, nodes[1]!.socket, ['ip', 'list']);
    if (k8s) await deleteNode(n, k8s, nodes, nodes[2]!, other);
  } finally {
    n.step('Clean up everything the demo created');
    for (const s of servers) s.kill();
    for (const p of pods) {
      if (p.node.netconf) run(n, [join(p.node.dir, 'cni/bin/cellium-cni')], { input: p.node.netconf, env: cniEnv('DEL', p), quiet: true });
      run(n, ['ip', 'netns', 'del', p.netns], { quiet: true });
    }
    for (const [i, node] of nodes.entries()) {
      if (node.agent) await stopAgent(n, node.agent);
      run(n, ['ip', 'link', 'del', `cdemo-n${i + 1}`], { quiet: true });
      run(n, ['ip', 'netns', 'del', node.netns], { quiet: true });
      rmSync(node.bpfRoot, { recursive: true, force: true });
    }
    run(n, ['ip', 'link', 'del', BRIDGE], { quiet: true });
    await k8s?.stop();
    if (etcd && etcd.exitCode === null) {
      const exited = new Promise((r) => etcd!.once('exit', r));
      etcd.kill('SIGTERM');
      await Promise.race([exited, sleep(5000)]);
      if (etcd.exitCode === null) etcd.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
    n.say(`removed the pods, the nodes' network namespaces and agents, the bridge, ${k8s ? 'the control plane' : 'etcd'} and its data, the pinned BPF objects and the state`);
  }
}

/** The CNI environment of a call for a pod. */
function cniEnv(command: string, p: Pod): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CNI_COMMAND: command,
    CNI_CONTAINERID: p.containerId,
    CNI_NETNS: `/var/run/netns/${p.netns}`,
    CNI_IFNAME: 'eth0',
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${DEMO_NAMESPACE};K8S_POD_NAME=${p.name}`,
    CNI_PATH: join(p.node.dir, 'cni/bin'),
  };
}

/** A TCP probe from one pod to another; throws when the outcome is not the expected one. */
function tcp(n: Narrator, from: Pod, to: Pod, port: number, expectOk: boolean): void {
  const r = run(n, ['ip', 'netns', 'exec', from.netns, process.execPath, '-e', TCP_PROBE, to.ip!, String(port)], { show: `${from.name}@${from.node.name}$ connect ${to.ip}:${port}  # ${to.name}@${to.node.name}` });
  if ((r.code === 0) !== expectOk) throw new Error(`tcp ${from.name} -> ${to.name}:${port}: expected ${expectOk ? 'success' : 'a drop'}, got exit ${r.code}: ${r.stdout}${r.stderr}`);
  n.say(expectOk ? `${from.name} -> ${to.name}:${port} passes, as expected` : `${from.name} -> ${to.name}:${port} is dropped, as expected`);
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === new URL(process.argv[1], 'file:').href;
if (invokedDirectly) {
  const { consoleNarrator } = await import('./runner.js');
  if (process.getuid?.() !== 0) {
    process.stderr.write('demo:cluster needs root: it makes network namespaces, a bridge and loads BPF programs (sudo npm run demo:cluster)\n');
    process.exitCode = 1;
  } else {
    try {
      const arg = process.argv.slice(2).find((a) => a.startsWith('--store='));
      const store = arg?.slice('--store='.length) ?? 'etcd';
      if (store !== 'etcd' && store !== 'k8s') throw new Error(`--store=${store}: give --store=etcd (the default) or --store=k8s`);
      await clusterDemo(consoleNarrator(), store);
      process.stdout.write('    Demo finished.\n');
    } catch (err) {
      process.stderr.write(`demo:cluster failed: ${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  }
}

/**
 * A node deleted (Kubernetes mode): its agent stopped (the machine is gone), its Node deleted and
 * with it its CiliumNode (owned by the Node: Kubernetes' garbage collector deletes it); the other nodes drop the route to its pod CIDR and every ipcache entry of it and
 * its pods (its pods' CiliumEndpoints may stay behind: they no longer count).
 */
async function deleteNode(n: Narrator, k8s: DemoK8s, nodes: readonly Node[], gone: Node, pod: Pod): Promise<void> {
  n.step(`Delete ${gone.name}: its routes and ipcache entries leave the other nodes`);
  const seen = JSON.parse((await cli(n, nodes[0]!.socket, ['-o', 'json', 'node', 'list'], true)).stdout) as { 'nodes-added'?: { name: string; 'primary-address'?: { ipv4?: { 'alloc-range'?: string } } }[] };
  const cidr = seen['nodes-added']?.find((e) => e.name.endsWith(`/${gone.name}`))?.['primary-address']?.ipv4?.['alloc-range'];
  if (!cidr) throw new Error(`${nodes[0]!.name} does not know the pod CIDR of ${gone.name}`);
  if (gone.agent) await stopAgent(n, gone.agent);
  gone.agent = undefined;
  const owner = k8s.kubectl(['get', 'ciliumnode', gone.name, '-o', 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}'], { quiet: true }).stdout.trim();
  if (owner !== `Node/${gone.name}`) throw new Error(`CiliumNode ${gone.name} is not owned by its Node (ownerReferences: ${owner || 'none'})`);
  if (k8s.kubectl(['delete', 'node', gone.name], { show: `kubectl delete node ${gone.name}   # its CiliumNode is owned by the Node` }).code !== 0) throw new Error(`deleting Node ${gone.name} failed`);
  // Kubernetes' garbage collector (kube-controller-manager) deletes the dependents of a deleted owner;
  // it learns a CRD's objects within its resource-discovery period (30 s), so allow for that.
  await waitFor(`Kubernetes' garbage collector to delete CiliumNode ${gone.name}`, () => k8s.kubectl(['get', 'ciliumnode', gone.name, '--ignore-not-found', '-o', 'name'], { quiet: true }).stdout.trim() === '', 90_000);
  n.say(`CiliumNode ${gone.name} deleted by Kubernetes' garbage collector (its owner, the Node, is gone)`);
  const rest = nodes.filter((x) => x !== gone);
  await waitFor(`${rest.map((x) => x.name).join(' and ')} to forget ${gone.name}`, async () => {
    for (const node of rest) {
      if (run(n, ['ip', '-n', node.netns, 'route', 'show', cidr], { quiet: true }).stdout.trim() !== '') return false;
      const ips = (await cli(n, node.socket, ['ip', 'list'], true)).stdout;
      if (ips.includes(`${pod.ip}/32`) || ips.includes(`${gone.ip}/32`)) return false;
    }
    return true;
  });
  await cli(n, nodes[0]!.socket, ['node', 'list']);
  must(n, ['ip', '-n', nodes[0]!.netns, 'route', 'show'], { show: `ip -n ${nodes[0]!.netns} route show   # no route to ${cidr} any more` });
  await cli(n, nodes[1]!.socket, ['ip', 'list']);
  n.say(`${gone.name}'s route (${cidr}) and its ipcache entries (${gone.ip}, ${pod.name} ${pod.ip}) are gone from every other node`);
}
