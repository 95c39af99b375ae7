// A real node (root) through the restarts a node lives through, with a NetworkPolicy in force: two
// web pods accept port 8080 only from pods labelled role=allowed; an allowed and a denied client.
// 1. a pod's container killed (containerd task SIGKILL): kubelet restarts it in the same sandbox;
// 2. a node reboot simulated: kubelet, the agent and containerd killed (SIGKILL) and started
//    again (kubelet restarts the agent's container);
// 3. the agent's pod deleted with kubectl: the DaemonSet recreates it.
// Around each: every pod keeps its address and its host interface, the allowed client reaches the
// web pods, the denied one never does (probed every 200 ms from inside its network namespace while
// the node's processes are down and coming back, as well as after), the agent's IPAM holds
// exactly the pods' addresses, its endpoints are the pods', and containerd holds one network
// namespace per pod: no interface or address leaks.
import t, { type Test } from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  agentCli, agentPid, containerPid, ctr, hostInterface, hostInterfaceExists, killNodeProcess, kubectlOk, netnsCount, nodeSkip, readyPods, reachesFrom,
  startNode, until, waitReady, webDeployment, type Node, type PodInfo,
} from './node.js';

const skip = nodeSkip();
const started = Date.now();
t.setTimeout(900_000);
t.teardown(() => console.log(`# test/k8s-node/restarts.test.ts: ${((Date.now() - started) / 1000).toFixed(1)} s`));

const POLICY = JSON.stringify({
  apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'web-from-allowed', namespace: 'default' },
  spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: { matchLabels: { role: 'allowed' } } }], ports: [{ port: 8080 }] }] },
});

interface World {
  web: PodInfo[];
  allowed: PodInfo;
  denied: PodInfo;
  /** pod name -> host interface */
  ifaces: Map<string, string>;
}

async function pods(n: Node): Promise<World> {
  const web = await waitReady(n, 'web', 2);
  const [allowed] = await waitReady(n, 'allowed', 1);
  const [denied] = await waitReady(n, 'denied', 1);
  const ifaces = new Map<string, string>();
  for (const p of [...web, allowed!, denied!]) ifaces.set(p.name, await hostInterface(n, p.name));
  return { web, allowed: allowed!, denied: denied!, ifaces };
}

/**
 * Probes the denied client against every web pod every 200 ms until stopped, from its network
 * namespace (its container's process, which lives on while kubelet, containerd and the agent are
 * down); counts what passed.
 */
async function deniedProbe(n: Node, w: World): Promise<{ stop(): Promise<{ passed: number; probes: number }> }> {
  const pid = await containerPid(n, w.denied.containerId);
  let running = true;
  let passed = 0;
  let probes = 0;
  const loop = (async () => {
    while (running) {
      for (const p of w.web) {
        probes++;
        if (await reachesFrom(pid, p.ip, 8080)) passed++;
      }
      await sleep(200);
    }
  })();
  return { stop: async () => ((running = false), await loop, { passed, probes }) };
}

/** Everything a restart must leave as it was. */
async function checkIntact(t: Test, n: Node, before: World, what: string): Promise<World> {
  const now = await pods(n);
  const all = (w: World): PodInfo[] => [...w.web, w.allowed, w.denied];
  t.same(all(now).map((p) => [p.name, p.ip]), all(before).map((p) => [p.name, p.ip]), `${what}: the same pods with the same addresses`);
  for (const p of all(now)) t.equal(now.ifaces.get(p.name), before.ifaces.get(p.name), `${what}: ${p.name} keeps its host interface ${before.ifaces.get(p.name)}`);
  const allowedPid = await containerPid(n, now.allowed.containerId);
  const deniedPid = await containerPid(n, now.denied.containerId);
  for (const p of now.web) {
    t.ok(await until(`allowed -> ${p.ip}`, () => reachesFrom(allowedPid, p.ip, 8080), 30_000), `${what}: the allowed client reaches ${p.name}`);
    t.notOk(await reachesFrom(deniedPid, p.ip, 8080), `${what}: the denied client does not reach ${p.name}`);
  }
  const ipam = await agentCli<{ allocations: Record<string, string> }>(n, ['ipam']);
  t.same(Object.keys(ipam.allocations).sort(), all(now).map((p) => p.ip).sort(), `${what}: the agent's IPAM holds exactly the pods' addresses`);
  const eps = await agentCli<{ status: { networking?: { addressing?: { ipv4?: string }[]; 'interface-name'?: string } } }[]>(n, ['endpoint', 'list']);
  t.same(eps.map((e) => e.status.networking?.addressing?.[0]?.ipv4).sort(), all(now).map((p) => p.ip).sort(), `${what}: the agent's endpoints are the pods'`);
  t.same(eps.map((e) => e.status.networking?.['interface-name']).sort(), all(now).map((p) => now.ifaces.get(p.name)).sort(), `${what}: their interfaces are the pods' host interfaces`);
  t.equal(netnsCount(n), 4, `${what}: containerd holds one network namespace per pod`);
  return now;
}

async function agentReady(n: Node): Promise<void> {
  await until('the cellium DaemonSet pod Ready', async () => {
    const r = await n.c.kubectlJson<{ items: { metadata: { deletionTimestamp?: string }; status: { containerStatuses?: { ready: boolean }[] } }[] }>(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=cellium']);
    return r.items.length === 1 && !r.items[0]!.metadata.deletionTimestamp && (r.items[0]!.status.containerStatuses ?? []).every((s) => s.ready) && (r.items[0]!.status.containerStatuses ?? []).length > 0;
  }, 180_000);
  // the API's status may still be the one from before kubelet restarted: the agent must answer
  let last = '';
  await until('the agent answering in its pod', () => agentCli(n, ['status']).then(() => true, (err: unknown) => {
    last = err instanceof Error ? err.message : String(err);
    return false;
  }), 180_000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; the last \`kubectl exec ds/cellium -- cellium status\` said: ${last}${streamDiag(n, last)}`, { cause: err });
  });
}

/** When exec failed to reach containerd's streaming server: who listens on its port, and containerd's last streaming lines. */
function streamDiag(n: Node, last: string): string {
  const port = /:(\d+)\/exec\//.exec(last)?.[1];
  if (!port) return '';
  const attempt = (fn: () => string, what: string): string => {
    try {
      return fn();
    } catch (err) {
      return `${what}: ${(err as Error).message}`;
    }
  };
  const listening = attempt(() => execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' }).trim() || 'nothing', 'ss failed');
  const lines = attempt(() => readFileSync(join(n.c.dir, 'logs', 'containerd.log'), 'utf8').split('\n').filter((l) => /stream|level=error|level=fatal/i.test(l)).slice(-12).join('\n'), 'no containerd log');
  return `\nlistening on :${port}: ${listening}\ncontainerd's streaming and error lines:\n${lines}`;
}

t.test('pods keep their addresses and policies through container, node and agent restarts', { skip }, async (t) => {
  const n = await startNode(t);
  await kubectlOk(n.c, ['apply', '-f', '-'], POLICY);
  await kubectlOk(n.c, ['apply', '-f', '-'], webDeployment(n, 'web', 2));
  await kubectlOk(n.c, ['apply', '-f', '-'], webDeployment(n, 'allowed', 1, { role: 'allowed' }));
  await kubectlOk(n.c, ['apply', '-f', '-'], webDeployment(n, 'denied', 1, { role: 'denied' }));
  let w = await pods(n);
  w = await checkIntact(t, n, w, 'at start');

  // 1. a container killed: kubelet restarts it in the same sandbox
  let phase = Date.now();
  const victim = w.web[0]!;
  const kill = await ctr(n, ['tasks', 'kill', '--signal', 'SIGKILL', victim.containerId]);
  t.equal(kill.code, 0, `ctr tasks kill ${victim.name}'s container ${kill.stderr}`);
  await until(`${victim.name} restarted`, async () => (await readyPods(n, 'web')).find((p) => p.name === victim.name && p.restarts > victim.restarts), 120_000);
  w = await checkIntact(t, n, w, 'a container restarted by kubelet');
  t.comment(`container restart: ${((Date.now() - phase) / 1000).toFixed(1)} s`);

  // 2. a node reboot simulated: kubelet, the agent and containerd killed, then started again
  phase = Date.now();
  const probe = await deniedProbe(n, w);
  await sleep(500);
  const restartKubelet = await killNodeProcess(n, 'kubelet');
  const agent = agentPid(n);
  t.ok(agent, 'the agent process found in the node\'s cgroup');
  if (agent) process.kill(agent, 'SIGKILL');
  const restartContainerd = await killNodeProcess(n, 'containerd');
  await sleep(3000); // the node stays down a moment: the datapath alone enforces
  const allowedPid = await containerPid(n, w.allowed.containerId).catch(() => undefined);
  t.equal(allowedPid, undefined, 'containerd is down');
  await restartContainerd();
  await until('containerd back', async () => (await ctr(n, ['version'])).code === 0, 30_000);
  await restartKubelet();
  await agentReady(n);
  const reboot = await probe.stop();
  t.ok(reboot.probes > 0, `the denied client probed ${reboot.probes} times while the node restarted`);
  t.equal(reboot.passed, 0, 'no denied connection passed while the node restarted');
  w = await checkIntact(t, n, w, 'after a simulated node reboot');
  t.comment(`node reboot: ${((Date.now() - phase) / 1000).toFixed(1)} s`);

  // 3. the agent's pod deleted: the DaemonSet recreates it
  phase = Date.now();
  const probe2 = await deniedProbe(n, w);
  await kubectlOk(n.c, ['-n', 'kube-system', 'delete', 'pod', '-l', 'k8s-app=cellium', '--wait=true']);
  await agentReady(n);
  const recreated = await probe2.stop();
  t.ok(recreated.probes > 0, `the denied client probed ${recreated.probes} times while the agent's pod was recreated`);
  t.equal(recreated.passed, 0, 'no denied connection passed while the agent\'s pod was recreated');
  w = await checkIntact(t, n, w, 'after the agent\'s pod was recreated');
  t.comment(`agent pod recreated: ${((Date.now() - phase) / 1000).toFixed(1)} s`);
  for (const name of w.ifaces.values()) t.ok(hostInterfaceExists(name), `${name} still exists`);
});
