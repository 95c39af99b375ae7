// The control-plane harness (scripts/k8s.sh, test/k8s/cluster.ts) against the real binaries:
// up answers /readyz, stores and serves objects, the scheduler and the controller-manager run, a
// ServiceAccount token authenticates (and is no admin), down leaves no process and no directory.
// Time budget: `up` takes about 10-20 s here, the checks a few more; the binaries are built before
// tap (scripts/test.sh runs scripts/k8s.sh prepare), never inside this file.
import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { k8sScript, k8sSkip, run, startCluster, type Cluster } from './cluster.js';

const skip = k8sSkip();

/** Polls `fn` every 250 ms until it returns a value, for at most `secs` seconds. */
async function eventually<T>(secs: number, what: string, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + secs * 1000;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what} not within ${secs} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The PIDs (with start times) `up` recorded. */
function recordedPids(c: Cluster): Array<{ name: string; pid: number; start: string }> {
  return readdirSync(join(c.dir, 'pids')).map((name) => {
    const [pid, start] = readFileSync(join(c.dir, 'pids', name), 'utf8').trim().split(' ');
    return { name, pid: Number(pid), start: start! };
  });
}

/** Whether the process PID with this start time still runs (zombies do not). */
function alive(pid: number, start: string): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return fields[19] === start && fields[0] !== 'Z';
}

interface Pod {
  spec: { containers: Array<{ image: string }>; serviceAccountName: string };
  status: { phase: string; conditions?: Array<{ type: string; status: string; reason?: string }> };
}

t.test('up, use, down', { skip }, async (t) => {
  const c = await startCluster(t);
  const ns = `harness-${randomBytes(3).toString('hex')}`;

  t.equal(c.env.KUBECONFIG, c.kubeconfig, 'DIR/env exports KUBECONFIG=DIR/kubeconfig');
  const which = await run('bash', ['-c', 'command -v kubectl'], c.env);
  t.match(which.stdout.trim(), /cellium-k8s\/v[0-9.]+\/bin(-[0-9a-f]+)?\/kubectl$/, 'DIR/env puts the built binaries first on PATH');
  const version = await c.kubectlJson<{ serverVersion: { gitVersion: string } }>(['version']);
  t.equal(version.serverVersion.gitVersion, c.env.CELLIUM_K8S_VERSION, 'the apiserver is the pinned version');

  const readyz = await c.kubectl(['get', '--raw', '/readyz']);
  t.equal(readyz.stdout.trim(), 'ok', `/readyz ${readyz.stderr}`);

  t.equal((await c.kubectl(['create', 'namespace', ns])).code, 0, 'namespace created');
  const podYaml = `apiVersion: v1
kind: Pod
metadata: { name: p1, namespace: ${ns} }
spec:
  containers: [{ name: c, image: localhost/not-pulled:never }]
`;
  const apply = await c.kubectl(['apply', '-f', '-'], podYaml);
  t.equal(apply.code, 0, `pod created ${apply.stderr}`);
  const pod = await c.kubectlJson<Pod>(['get', 'pod', 'p1', '-n', ns]);
  t.equal(pod.spec.containers[0]!.image, 'localhost/not-pulled:never', 'the pod reads back');
  t.equal(pod.status.phase, 'Pending', 'no kubelet: the pod stays Pending');
  t.equal(pod.spec.serviceAccountName, 'default', 'the ServiceAccount admission set the default account');

  // The scheduler runs: with no node it marks the pod unschedulable.
  const unschedulable = await eventually(30, 'the scheduler marking the pod unschedulable', async () => {
    const p = await c.kubectlJson<Pod>(['get', 'pod', 'p1', '-n', ns]);
    return p.status.conditions?.find((x) => x.type === 'PodScheduled' && x.status === 'False');
  });
  t.equal(unschedulable.reason, 'Unschedulable', 'kube-scheduler ran and found no node');

  // The controller-manager runs: the new namespace gets its default ServiceAccount.
  await eventually(30, `the default ServiceAccount in ${ns}`, async () => {
    const r = await c.kubectl(['get', 'serviceaccount', 'default', '-n', ns]);
    return r.code === 0 ? true : undefined;
  });
  t.pass('kube-controller-manager made the default ServiceAccount');

  // A ServiceAccount token (signed with the generated key) authenticates, and only as that account.
  const token = await c.kubectl(['create', 'token', 'default', '-n', ns, '--duration', '10m']);
  t.equal(token.code, 0, `token issued ${token.stderr}`);
  const asAccount = (tok: string, args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    run('kubectl', ['--kubeconfig', '/dev/null', '--server', c.server, '--certificate-authority', c.caFile, '--token', tok, ...args], c.env);
  const who = await asAccount(token.stdout.trim(), ['auth', 'whoami', '-o', 'json']);
  t.equal(who.code, 0, `whoami with the token ${who.stderr}`);
  t.equal((JSON.parse(who.stdout) as { status: { userInfo: { username: string } } }).status.userInfo.username,
    `system:serviceaccount:${ns}:default`, 'the token authenticates as the ServiceAccount');
  const canList = await asAccount(token.stdout.trim(), ['auth', 'can-i', 'list', 'pods', '-n', ns]);
  t.equal(canList.stdout.trim(), 'no', 'the default ServiceAccount has no rights of its own (RBAC)');
  const secrets = await asAccount(token.stdout.trim(), ['get', 'secrets', '-n', 'kube-system']);
  t.not(secrets.code, 0, 'reading kube-system secrets with it is refused');
  t.match(secrets.stderr, /forbidden/i);
  const [head, body, sig] = token.stdout.trim().split('.');
  const forged = `${head}.${body}.${sig!.slice(0, -4)}${sig!.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
  const bad = await asAccount(forged, ['auth', 'whoami']);
  t.not(bad.code, 0, 'a token with a changed signature is refused');
  t.match(bad.stderr, /Unauthorized|provide credentials/i);

  // down stops exactly what up started, and removes the directory.
  const pids = recordedPids(c);
  t.same(pids.map((p) => p.name).sort(), ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'supervisor'], 'up recorded every process and their parent');
  for (const p of pids) t.ok(alive(p.pid, p.start), `${p.name} runs before down`);
  await c.stop();
  for (const p of pids) t.notOk(alive(p.pid, p.start), `${p.name} (pid ${p.pid}) is gone after down`);
  t.notOk(existsSync(c.dir), 'down removed the directory');
});

t.test('up refuses a directory in use and down one it did not make', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'precious'), 'keep me');
  const up = k8sScript(['up', '--dir', dir, '--no-build']);
  t.equal(up.code, 1, 'up refuses a non-empty directory');
  t.match(up.stderr, /exists and is not empty/);
  const down = k8sScript(['down', '--dir', dir]);
  t.equal(down.code, 1, 'down refuses a directory up did not make');
  t.match(down.stderr, /not made by scripts\/k8s\.sh up/);
  t.equal(readFileSync(join(dir, 'precious'), 'utf8'), 'keep me', 'and leaves its files alone');
  const noDir = k8sScript(['up']);
  t.match(noDir.stderr, /--dir DIR is required/);
});

t.test('a failed up stops what it started and removes its directory', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // An "etcd" that starts, says why it fails, and exits: up must notice, report and clean up.
  const fake = join(dir, 'fake-etcd');
  writeFileSync(fake, '#!/bin/sh\necho "fake etcd: refusing to serve" >&2\nsleep 1\nexit 7\n', { mode: 0o755 });
  const target = join(dir, 'cluster');
  mkdirSync(target);
  const up = k8sScript(['up', '--dir', target, '--no-build'], { ...process.env, CELLIUM_TEST_ETCD: fake });
  t.equal(up.code, 1, 'up fails');
  t.match(up.stderr, /etcd exited while waiting for etcd's \/health: .*refusing to serve/s, 'naming the process and its log');
  t.notOk(existsSync(target), 'the directory is removed');
});

t.test('a failed up kills what still runs', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A real etcd that serves plain HTTP where up expects HTTPS: it runs, but never passes up's
  // health check, so up gives up after its 30 s bound and must stop it.
  const pidFile = join(dir, 'etcd.pid');
  const fake = join(dir, 'plain-etcd');
  writeFileSync(fake, `#!/bin/sh\necho $$ > ${pidFile}\nexec etcd $(echo "$@" | sed 's/https:/http:/g')\n`, { mode: 0o755 });
  const target = join(dir, 'cluster');
  // --foreground this time (the test above ran the detached supervisor): both paths clean up.
  const up = k8sScript(['up', '--dir', target, '--no-build', '--foreground'], { ...process.env, CELLIUM_TEST_ETCD: fake });
  t.equal(up.code, 1, 'up fails');
  t.match(up.stderr, /etcd's \/health not within 30 s/, 'saying what it waited for');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  let gone: boolean;
  try {
    gone = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    gone = true;
  }
  t.ok(gone, `the etcd it started (pid ${pid}) is stopped`);
  t.notOk(existsSync(target), 'the directory is removed');
});

// The skip contract: where the binaries cannot be built, `check` says why in one line (exit 3),
// which k8sSkip passes to tap; these run everywhere, binaries or not.
t.test('check names why the binaries cannot be built', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'cellium-k8s-cache-'));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  const noGo = k8sScript(['check'], { ...process.env, CELLIUM_K8S_CACHE: cache, CELLIUM_K8S_GO: join(cache, 'no-go') });
  t.equal(noGo.code, 3, 'exit 3: cannot build here');
  t.match(noGo.stdout, /^k8s: no Go >= [0-9.]+ .*Debian's Go 1\.19 is too old.*\n$/, 'one line naming the missing Go');
  const go = spawnSync('go', ['version']).status === 0;
  t.test('with the module proxy off and an empty cache', { skip: go ? false : 'no go on PATH' }, async (t) => {
    const noProxy = k8sScript(['check'], { ...process.env, CELLIUM_K8S_CACHE: cache, GOPROXY: 'off' });
    t.equal(noProxy.code, 3, 'exit 3: cannot build here');
    t.match(noProxy.stdout, /^k8s: Go module proxy unreachable \(off\): cannot download k8s\.io\/kubernetes v[0-9.]+: .*\n$/, 'one line naming the proxy');
    const prepare = k8sScript(['prepare'], { ...process.env, CELLIUM_K8S_CACHE: cache, GOPROXY: 'off' });
    t.equal(prepare.code, 0, 'prepare (scripts/test.sh) goes on');
    t.match(prepare.stdout, /the Kubernetes tests \(test\/k8s\/\) will skip/);
  });
});
