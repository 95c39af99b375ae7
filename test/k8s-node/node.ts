/**
 * The node tests' fixture: a control plane and a node of this machine (`scripts/k8s.sh up --dir
 * DIR --with-kubelet`: containerd, kubelet, Cellium as its DaemonSet, Ready), and what the tests do
 * to it: Deployments of the busybox test image, `kubectl exec` in pods, the agent's CLI in its
 * pod, the host side of a pod's interface, killing and restarting the node's processes by PID.
 * See docs/k8s-harness.md.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { needs } from '../needs.js';
import { run, startCluster, type Cluster, type Run } from '../k8s/cluster.js';
import { kubectlOk, until } from '../k8s/util.js';

export { kubectlOk, until };

/** A Ready node and its control plane. */
export interface Node {
  readonly c: Cluster;
  /** The Node's name (this machine's host name). */
  readonly name: string;
  /** DIR/node: containerd's, kubelet's and Cellium's directories. */
  readonly dir: string;
  /** The busybox image imported into the node's containerd (httpd, nc, wget). */
  readonly busybox: string;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Why the node tests cannot run here (one line), or false: root and a control plane. */
export function nodeSkip(): string | false {
  return needs(['root', 'k8s'], 'runs containerd and a kubelet and deploys Cellium on this machine');
}

/** Starts a control plane with a node (stopped at t's teardown); prints how long `up` took. */
export async function startNode(t: Teardown & { comment(...a: unknown[]): void }): Promise<Node> {
  const start = Date.now();
  const c = await startCluster(t, { withKubelet: true });
  t.comment(`up --with-kubelet: ${((Date.now() - start) / 1000).toFixed(1)} s`);
  return { c, name: c.env.CELLIUM_K8S_NODE!, dir: c.env.CELLIUM_K8S_NODE_DIR!, busybox: c.env.CELLIUM_K8S_BUSYBOX_IMAGE! };
}

/** A Deployment of busybox httpd serving port 8080. */
export function webDeployment(n: Node, name: string, replicas: number, labels: Record<string, string> = {}, runtimeClassName?: string): string {
  const l = { app: name, ...labels };
  return JSON.stringify({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'default' },
    spec: {
      replicas, selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: l },
        spec: {
          ...(runtimeClassName ? { runtimeClassName } : {}),
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: 'web', image: n.busybox, imagePullPolicy: 'Never',
            command: ['/bin/busybox', 'httpd', '-f', '-p', '8080', '-h', '/www'],
            ports: [{ containerPort: 8080 }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          }],
        },
      },
    },
  });
}

/** A ClusterIP Service on port 80 to the pods labelled app=NAME, port 8080. */
export function webService(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' },
    spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 8080 }] },
  });
}

/** A running pod's name, IP and UID. */
export interface PodInfo {
  readonly name: string;
  readonly ip: string;
  readonly uid: string;
  readonly restarts: number;
  /** The container's id in containerd (the pod's one container). */
  readonly containerId: string;
}

interface PodList {
  items: { metadata: { name: string; uid: string; deletionTimestamp?: string }; status: { podIP?: string; phase?: string; containerStatuses?: { ready: boolean; restartCount: number; containerID?: string }[] } }[];
}

/** The Ready pods labelled app=NAME (not being deleted). */
export async function readyPods(n: Node, app: string): Promise<PodInfo[]> {
  const list = await n.c.kubectlJson<PodList>(['get', 'pods', '-l', `app=${app}`]);
  return list.items
    .filter((p) => !p.metadata.deletionTimestamp && p.status.podIP && (p.status.containerStatuses ?? []).every((s) => s.ready) && (p.status.containerStatuses ?? []).length > 0)
    .map((p) => ({ name: p.metadata.name, ip: p.status.podIP!, uid: p.metadata.uid, restarts: (p.status.containerStatuses ?? []).reduce((a, s) => a + s.restartCount, 0),
      containerId: (p.status.containerStatuses?.[0]?.containerID ?? '').replace(/^containerd:\/\//, '') }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Waits until COUNT pods labelled app=NAME are Ready (bounded). */
export function waitReady(n: Node, app: string, count: number, ms = 120_000): Promise<PodInfo[]> {
  return until(`${count} Ready pods app=${app}`, async () => {
    const pods = await readyPods(n, app);
    return pods.length === count ? pods : undefined;
  }, ms);
}

/** Runs a command in a pod's container (kubectl exec). */
export function exec(n: Node, pod: string, cmd: readonly string[]): Promise<Run> {
  return n.c.kubectl(['exec', pod, '--', ...cmd]);
}

/**
 * Whether POD gets the index page of http://TARGET within 3 s (busybox nc in the pod; its wget's
 * -T crashes this busybox build). A refused or dropped connection is false.
 */
export async function reaches(n: Node, pod: string, target: string, port: number): Promise<boolean> {
  const r = await exec(n, pod, ['/bin/busybox', 'sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | /bin/busybox timeout 3 /bin/busybox nc ${target} ${port}`]);
  return r.code === 0 && /200 OK/.test(r.stdout);
}

/** The agent's CLI in its pod (the DaemonSet's agent container), JSON output. */
export async function agentCli<T>(n: Node, args: readonly string[]): Promise<T> {
  const out = await kubectlOk(n.c, ['-n', 'kube-system', 'exec', 'ds/cellium', '-c', 'cellium-agent', '--', 'cellium', ...args, '-o', 'json']);
  return JSON.parse(out) as T;
}

/**
 * The host's interface (name) a pod's eth0 is paired with: its iflink, read in the pod (retried
 * for up to 60 s: a restarted kubelet answers exec only once it has synced its pods).
 */
export async function hostInterface(n: Node, pod: string): Promise<string> {
  let last: Run | undefined;
  const r = await until(`reading ${pod}'s eth0 iflink`, async () => {
    last = await exec(n, pod, ['/bin/busybox', 'cat', '/sys/class/net/eth0/iflink']);
    return last.code === 0 ? last : undefined;
  }, 60_000).catch(() => {
    throw new Error(`reading ${pod}'s eth0 iflink: ${last?.stderr ?? ''}`);
  });
  const index = Number(r.stdout.trim());
  for (const name of readdirSync('/sys/class/net')) {
    if (Number(readFileSync(`/sys/class/net/${name}/ifindex`, 'utf8')) === index) return name;
  }
  throw new Error(`no host interface with index ${index} (${pod}'s eth0 peer)`);
}

/** Whether a host interface exists. */
export function hostInterfaceExists(name: string): boolean {
  return existsSync(`/sys/class/net/${name}`);
}

/** The pods' network namespaces containerd holds (files under its state directory). */
export function netnsCount(n: Node): number {
  const dir = join(n.dir, 'containerd/state/io.containerd.grpc.v1.cri/netns');
  return existsSync(dir) ? readdirSync(dir).length : 0;
}

/** The starttime of a process (field 22 of /proc/PID/stat), as scripts/k8s.sh records it. */
function starttime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[19]!;
}

function gone(pid: number): boolean {
  try {
    return /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/**
 * Kills the node's process NAME (kubelet or containerd) with SIGKILL, by the PID `up` recorded,
 * and returns its restart: the same command line and environment again, recorded in DIR/pids so
 * `down` stops it.
 */
export async function killNodeProcess(n: Node, name: 'kubelet' | 'containerd'): Promise<() => Promise<void>> {
  const pidFile = join(n.c.dir, 'pids', name);
  const pid = Number(readFileSync(pidFile, 'utf8').split(' ')[0]);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  const env = Object.fromEntries(readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter((kv) => kv.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  process.kill(pid, 'SIGKILL');
  await until(`${name} (pid ${pid}) gone`, () => gone(pid), 10_000);
  return async () => {
    const log = openSync(join(n.c.dir, 'logs', `${name}.log`), 'a');
    const p = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', log, log], detached: true, env });
    closeSync(log);
    p.unref();
    writeFileSync(pidFile, `${p.pid} ${starttime(p.pid!)}\n`);
  };
}

/** The agent's process on the host (node running cellium-agent under the node's cgroup). */
export function agentPid(n: Node): number | undefined {
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      const cgroup = readFileSync(`/proc/${e}/cgroup`, 'utf8');
      if (cmd.includes('cellium-agent') && cgroup.includes(`/cellium-k8s-${nodeId(n)}/`)) return Number(e);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** The node's id (scripts/lib/k8s-node.sh: the first 8 hex digits of sha256 of DIR). */
function nodeId(n: Node): string {
  return readFileSync(join(n.dir, '.node'), 'utf8').trim().split(' ')[2]!.replace('/cellium-k8s-', '');
}

/** Runs ctr against the node's containerd (namespace k8s.io). */
export function ctr(n: Node, args: readonly string[]): Promise<Run> {
  return run('ctr', ['--address', n.c.env.CELLIUM_K8S_CONTAINERD!, '--namespace', 'k8s.io', ...args], process.env);
}

/** The host PID of a container's process (containerd's task list). */
export async function containerPid(n: Node, containerId: string): Promise<number> {
  const r = await ctr(n, ['tasks', 'ls']);
  const line = r.stdout.split('\n').find((l) => l.startsWith(`${containerId} `));
  if (!line) throw new Error(`no task ${containerId} in containerd: ${r.stdout}${r.stderr}`);
  return Number(line.trim().split(/\s+/)[1]);
}

/**
 * Whether the process PID's network namespace (a pod's) gets the index page of http://TARGET:PORT
 * within 1 s: the host's static busybox nc run in that namespace (nsenter), so it works while
 * kubelet, containerd or the agent is down.
 */
export async function reachesFrom(pid: number, target: string, port: number): Promise<boolean> {
  const r = await run('nsenter', ['-t', String(pid), '-n', '/bin/busybox', 'timeout', '1', '/bin/busybox', 'nc', target, String(port)], process.env, 'GET / HTTP/1.0\r\n\r\n');
  return r.code === 0 && /200 OK/.test(r.stdout);
}
