/**
 * A real Kubernetes control plane for tests and benchmarks: `scripts/k8s.sh up` (etcd,
 * kube-apiserver, kube-controller-manager and kube-scheduler on loopback, under a temporary
 * directory) and `down` (stops them by PID, removes the directory), plus the agent's ServiceAccount
 * credentials (deploy/rbac.yaml). The binaries are built before (scripts/test.sh runs
 * `scripts/k8s.sh prepare`; `npm run k8s -- build`), never inside a test or bench: a cold build
 * takes far longer than tap's per-file timeout. See docs/k8s-harness.md. test/k8s/cluster.ts
 * re-exports this for the tests.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { root } from './agent-process.js';

/** scripts/k8s.sh of this checkout. */
export const K8S_SCRIPT = join(root(), 'scripts', 'k8s.sh');

/** The result of a command run to completion. */
export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running control plane. */
export interface Cluster {
  /** The directory `up` made (pki/, logs/, pids/, etcd/, env, kubeconfig). */
  readonly dir: string;
  /** The admin kubeconfig (client certificate in system:masters). */
  readonly kubeconfig: string;
  /** The apiserver's URL (https://127.0.0.1:port). */
  readonly server: string;
  /** The cluster CA certificate (PEM file) the apiserver's serving certificate chains to. */
  readonly caFile: string;
  /** The process environment with DIR/env sourced: KUBECONFIG, and PATH with the built binaries first. */
  readonly env: Readonly<Record<string, string>>;
  /** Runs the built kubectl (admin unless args say otherwise); `input` goes to its stdin. */
  kubectl(args: readonly string[], input?: string): Promise<Run>;
  /** Runs kubectl and parses its stdout as JSON; throws with its stderr when it fails. */
  kubectlJson<T>(args: readonly string[]): Promise<T>;
  /**
   * Compacts etcd at its current revision (physically): resourceVersions before it are gone, so
   * watches from them get "410 Gone" where the apiserver reads etcd directly (PodTemplates: the
   * harness runs them without watch cache). Returns the revision.
   */
  compactEtcd(): Promise<number>;
  /**
   * Kills kube-apiserver (SIGKILL, by the PID `up` recorded) and returns its restart: the same
   * command line again, recorded in DIR/pids so `down` stops it, resolving once /readyz says ok.
   */
  killApiserver(): Promise<() => Promise<void>>;
  /** Stops the control plane (`down`) and removes its directory; a second call does nothing. */
  stop(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Runs scripts/k8s.sh with the given arguments, synchronously. */
export function k8sScript(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Run {
  const r = spawnSync('bash', [K8S_SCRIPT, ...args], { encoding: 'utf8', env });
  return { code: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** Runs a command to completion with the given environment and stdin. */
export function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
    p.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    p.once('error', reject);
    p.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr }));
    if (p.stdin) {
      // A command that exits without reading all its input (EPIPE) is judged by its exit code.
      p.stdin.once('error', () => undefined);
      p.stdin.end(input);
    }
  });
}

/** The environment after sourcing DIR/env (the contract other tools use), as a plain object. */
function sourceEnv(envFile: string): Record<string, string> {
  const r = spawnSync('bash', ['-c', '. "$1" && env -0', 'bash', envFile], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sourcing ${envFile} failed: ${r.stderr}`);
  const env: Record<string, string> = {};
  for (const kv of r.stdout.split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return env;
}

/** The line `scripts/k8s.sh up` prints once the control plane is ready. */
const READY = /^k8s: Kubernetes \S+ up: /m;

/** How to start a control plane. */
export interface ClusterOptions {
  /**
   * Also a node (`up --with-kubelet`, root): containerd and kubelet of this machine, Cellium
   * deployed as its DaemonSet, returned once the node is Ready (docs/k8s-harness.md).
   */
  readonly withKubelet?: boolean;
}

/**
 * Starts a control plane in a new temporary directory (`scripts/k8s.sh up --no-build --foreground`:
 * this process is the parent of its supervisor, which reaps etcd and the Kubernetes processes);
 * with `t`, it is stopped at t's teardown. It is also stopped when the test process exits without
 * stopping it.
 */
export async function startCluster(t?: Teardown, opts: ClusterOptions = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-'));
  const args = ['up', '--dir', dir, '--no-build', '--foreground', ...(opts.withKubelet ? ['--with-kubelet'] : [])];
  const supervisor = spawn('bash', [K8S_SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => supervisor.once('exit', (code) => resolve(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      let err = '';
      supervisor.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (READY.test(out)) resolve();
      });
      supervisor.stderr.on('data', (b: Buffer) => (err += b.toString()));
      supervisor.once('error', reject);
      void exited.then((code) => reject(new Error(`scripts/k8s.sh up failed (${code}): ${err.trim() || out.trim()}`)));
    });
  } catch (err) {
    // a failed up removed what it made; a node's mounts are gone before DIR is
    k8sScript(['down', '--dir', dir]);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  // The supervisor runs until down; it does not keep this process alive (the exit hook stops it).
  supervisor.unref();
  supervisor.stdout.destroy();
  supervisor.stderr.destroy();
  const onExit = (): void => void k8sScript(['down', '--dir', dir]);
  process.once('exit', onExit);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      process.removeListener('exit', onExit);
      supervisor.ref();
      const down = await run('bash', [K8S_SCRIPT, 'down', '--dir', dir], process.env);
      if (down.code !== 0) throw new Error(`scripts/k8s.sh down failed (${down.code}): ${down.stderr.trim()}`);
      await exited;
    })());
  let env: Record<string, string>;
  try {
    env = sourceEnv(join(dir, 'env'));
  } catch (err) {
    await stop();
    throw err;
  }
  const kubectl = (args: readonly string[], input?: string): Promise<Run> => run('kubectl', args, env, input);
  const cluster: Cluster = {
    dir,
    kubeconfig: join(dir, 'kubeconfig'),
    server: env.CELLIUM_K8S_SERVER!,
    caFile: join(dir, 'pki', 'ca.crt'),
    env,
    kubectl,
    async kubectlJson<T>(args: readonly string[]): Promise<T> {
      const r = await kubectl([...args, '-o', 'json']);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
      return JSON.parse(r.stdout) as T;
    },
    compactEtcd: async () => {
      const tls = { ca: readFileSync(join(dir, 'pki', 'ca.crt')), cert: readFileSync(join(dir, 'pki', 'apiserver-etcd-client.crt')), key: readFileSync(join(dir, 'pki', 'apiserver-etcd-client.key')) };
      const range = await etcdPost<{ header: { revision: string } }>(env.CELLIUM_K8S_ETCD!, '/v3/kv/range', { key: Buffer.from('/').toString('base64') }, tls);
      const revision = Number(range.header.revision);
      await etcdPost(env.CELLIUM_K8S_ETCD!, '/v3/kv/compaction', { revision: String(revision), physical: true }, tls);
      return revision;
    },
    killApiserver: async () => {
      const pidFile = join(dir, 'pids', 'kube-apiserver');
      const pid = Number(readFileSync(pidFile, 'utf8').split(' ')[0]);
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
      process.kill(pid, 'SIGKILL');
      // gone, or a zombie; the supervisor may reap it between the two reads
      const stat = (): string => {
        try {
          return readFileSync(`/proc/${pid}/stat`, 'utf8');
        } catch {
          return ') Z ';
        }
      };
      while (existsSync(`/proc/${pid}`) && !/\) Z /.test(stat())) await new Promise((r) => setTimeout(r, 50));
      return async () => {
        const log = openSync(join(dir, 'logs', 'kube-apiserver.log'), 'a');
        const p = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', log, log], detached: true });
        closeSync(log);
        p.unref();
        const stat = readFileSync(`/proc/${p.pid}/stat`, 'utf8');
        writeFileSync(pidFile, `${p.pid} ${stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[19]}\n`);
        for (let i = 0; i < 600; i++) {
          if ((await kubectl(['get', '--raw', '/readyz'])).code === 0) return;
          await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error('kube-apiserver restarted but /readyz did not say ok within 60 s');
      };
    },
    stop,
  };
  t?.teardown(stop);
  return cluster;
}

/** POSTs JSON to etcd's v3 HTTP gateway with a client certificate; the JSON answer (bounded: 10 s). */
function etcdPost<R>(endpoint: string, path: string, body: unknown, tls: { ca: Buffer; cert: Buffer; key: Buffer }): Promise<R> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, endpoint), { method: 'POST', ...tls, timeout: 10_000, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (b: Buffer) => (text += b.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text) as R) : reject(new Error(`etcd ${path}: ${res.statusCode} ${text}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`etcd ${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/**
 * Why no control plane can start here (one line), or false: `scripts/k8s.sh check` says Go or the
 * module proxy is missing (exit 3) or fails. Binaries that could be built but are not (exit 4) are
 * not a reason: `startCluster` then fails naming the command that builds them.
 */
export function k8sUnavailable(): string | false {
  const check = spawnSync('bash', [K8S_SCRIPT, 'check'], { encoding: 'utf8' });
  // 0: built; 4: buildable but not built; 3: cannot be built here
  if (check.status === 3) return `needs a Kubernetes control plane: ${check.stdout.trim().replace(/^k8s: /, '')}`;
  if (check.status !== 0 && check.status !== 4) return `needs a Kubernetes control plane: scripts/k8s.sh check failed (${String(check.status)}): ${(check.stderr ?? '').trim()}`;
  return false;
}

/** Runs kubectl (admin) and returns its stdout; throws with its stderr when it fails. */
export async function kubectlOk(c: Cluster, args: string[], input?: string): Promise<string> {
  const r = await c.kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/**
 * The agent's credentials as a DaemonSet pod has them: admin applies the ServiceAccount of
 * deploy/daemonset.yaml and deploy/rbac.yaml, then a token of that ServiceAccount goes into a
 * kubeconfig in `dir` (the cluster's server and CA). Everything run with it is allowed exactly
 * what the ClusterRole grants: a forbidden call fails.
 */
export async function agentKubeconfig(c: Cluster, dir: string): Promise<string> {
  const docs = parseAllDocuments(readFileSync(join(root(), 'deploy/daemonset.yaml'), 'utf8')).map((d) => d.toJS() as { kind: string });
  await kubectlOk(c, ['apply', '-f', '-'], stringify(docs.find((d) => d.kind === 'ServiceAccount')));
  await kubectlOk(c, ['apply', '-f', join(root(), 'deploy/rbac.yaml')]);
  const token = (await kubectlOk(c, ['-n', 'kube-system', 'create', 'token', 'cellium', '--duration=1h'])).trim();
  const file = join(dir, 'cellium.kubeconfig');
  writeFileSync(file, stringify({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: c.server, 'certificate-authority': c.caFile } }],
    users: [{ name: 'cellium', user: { token } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'cellium' } }],
    'current-context': 'x',
  }), { mode: 0o600 });
  return file;
}
