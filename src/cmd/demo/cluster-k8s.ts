/**
 * The Kubernetes side of `npm run demo:cluster -- --store=k8s`: a control plane of the harness
 * (`scripts/k8s.sh up`, etcd + kube-apiserver + controllers on the host's loopback), the agents'
 * ServiceAccount and ClusterRole (deploy/), each node's view of the apiserver (the nodes are
 * network namespaces: a relay on each node's loopback, through a unix socket, to the host's
 * loopback, where the apiserver's certificate is valid), Node and Pod objects, and removing it all.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../../hive/index.js';
import { DEMO_NAMESPACE } from './policy.js';
import { must, repoRoot, run, type Narrator, type RunResult } from './runner.js';

/** A relay: accepts on `listen`, pipes each connection to `connect` (each `{port, host}` or `{path}`). */
const RELAY = `const net=require('net');const [l,c]=process.argv.slice(1).map(s=>JSON.parse(s));` +
  `const srv=net.createServer(a=>{const b=net.connect(c);a.pipe(b);b.pipe(a);a.on('error',()=>b.destroy());b.on('error',()=>a.destroy())});` +
  `srv.listen(l,()=>process.stdout.write('listening\\n'));process.on('SIGTERM',()=>process.exit(0))`;

/** A running control plane for the demo. */
export interface DemoK8s {
  readonly dir: string;
  /** The environment with DIR/env sourced (KUBECONFIG, PATH with kubectl). */
  readonly env: NodeJS.ProcessEnv;
  /** The agents' kubeconfig (the ServiceAccount's token; the server on loopback). */
  readonly agentKubeconfig: string;
  /** kubectl as admin. */
  kubectl(args: readonly string[], opts?: { input?: string; quiet?: boolean; show?: string }): RunResult;
  /** Makes the apiserver reachable on a node's loopback (its network namespace). */
  relayInto(netns: string): Promise<void>;
  /** Stops the relays and the control plane, removes its directory. */
  stop(): Promise<void>;
}

/** Waits for a spawned relay to say it listens. */
function listening(p: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    p.stdout!.once('data', () => resolve());
    p.once('exit', (code) => reject(new Error(`the apiserver relay exited (${code})`)));
  });
}

/** The environment after sourcing DIR/env. */
function sourced(envFile: string): NodeJS.ProcessEnv {
  const r = spawnSync('bash', ['-c', '. "$1" && env -0', 'bash', envFile], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sourcing ${envFile} failed: ${r.stderr}`);
  const env: NodeJS.ProcessEnv = {};
  for (const kv of r.stdout.split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return env;
}

/** Starts the control plane under `dir` and prepares the agents' credentials. */
export async function startDemoK8s(n: Narrator, dir: string): Promise<DemoK8s> {
  const k8sDir = join(dir, 'k8s');
  const script = join(repoRoot, 'scripts/k8s.sh');
  const relays: ChildProcess[] = [];
  let up = false;
  const stop = async (): Promise<void> => {
    for (const r of relays) r.kill('SIGTERM');
    if (up) run(n, ['bash', script, 'down', '--dir', k8sDir], { show: `npm run k8s -- down --dir ${k8sDir}` });
    up = false;
  };
  must(n, ['bash', script, 'up', '--dir', k8sDir], { show: `npm run k8s -- up --dir ${k8sDir}` });
  up = true;
  try {
    const env = sourced(join(k8sDir, 'env'));
    const server = new URL(env.CELLIUM_K8S_SERVER!);
    const kubectl = (args: readonly string[], opts: { input?: string; quiet?: boolean; show?: string } = {}): RunResult =>
      run(n, ['kubectl', ...args], { env, ...(opts.input !== undefined ? { input: opts.input } : {}), ...(opts.quiet ? { quiet: true } : {}), show: opts.show ?? `kubectl ${args.join(' ')}` });
    const ok = (args: readonly string[], input?: string): RunResult => {
      const r = kubectl(args, input === undefined ? {} : { input });
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
      return r;
    };
    n.say('the agents run with their ServiceAccount (deploy/rbac.yaml): allowed exactly what the ClusterRole grants');
    ok(['-n', 'kube-system', 'create', 'serviceaccount', 'cellium']);
    ok(['apply', '-f', join(repoRoot, 'deploy/rbac.yaml')]);
    const token = ok(['-n', 'kube-system', 'create', 'token', 'cellium', '--duration=2h'], undefined).stdout.trim();
    const agentKubeconfig = join(dir, 'cellium.kubeconfig');
    writeFileSync(agentKubeconfig, JSON.stringify({
      apiVersion: 'v1', kind: 'Config',
      clusters: [{ name: 'demo', cluster: { server: server.href.replace(/\/$/, ''), 'certificate-authority': join(k8sDir, 'pki/ca.crt') } }],
      users: [{ name: 'cellium', user: { token } }],
      contexts: [{ name: 'demo', context: { cluster: 'demo', user: 'cellium' } }],
      'current-context': 'demo',
    }), { mode: 0o600 });
    const sock = join(dir, 'apiserver.sock');
    const root = spawn(process.execPath, ['-e', RELAY, JSON.stringify({ path: sock }), JSON.stringify({ host: '127.0.0.1', port: Number(server.port) })], { stdio: ['ignore', 'pipe', 'ignore'] });
    relays.push(root);
    await listening(root);
    ok(['create', 'namespace', DEMO_NAMESPACE]);
    return {
      dir: k8sDir, env, agentKubeconfig, kubectl, stop,
      relayInto: async (netns) => {
        const p = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', RELAY, JSON.stringify({ host: '127.0.0.1', port: Number(server.port) }), JSON.stringify({ path: sock })], { stdio: ['ignore', 'pipe', 'ignore'] });
        relays.push(p);
        await listening(p);
        n.say(`${netns}: 127.0.0.1:${server.port} relays to the apiserver on the host's loopback (${sock})`);
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A Node object (no kubelet: the demo's nodes are network namespaces). */
export function nodeObject(name: string, ip: string): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } }, status: { addresses: [{ type: 'InternalIP', address: ip }] } });
}

/** A Pod bound to `node` (no kubelet runs it: the demo plumbs it through the CNI shim). */
export function podObject(name: string, app: string, node: string): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: DEMO_NAMESPACE, labels: { app } },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'localhost/none:never' }] },
  });
}

/** Polls `fn` every 100 ms (at most `ms`). */
export async function waitFor(what: string, fn: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (await fn()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}
