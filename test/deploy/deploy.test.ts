import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isolatedFlags, stopOnceStarted } from '../cmd/agent-process.js';

const root = join(import.meta.dirname, '../..');
const agentBin = join(root, 'bin/cellium-agent.js');
const unit = readFileSync(join(root, 'deploy/cellium-agent.service'), 'utf8');
const built = existsSync(join(root, 'dist/src/cmd/agent.js'));
const agentFlags = built
  ? new Set([...spawnSync(process.execPath, [agentBin, '--help'], { encoding: 'utf8' }).stdout.matchAll(/^ {2}--([a-z0-9-]+)=/gm)].map((m) => m[1]!))
  : new Set<string>();

/** The unit with ExecStart pointing at this checkout's agent. */
function localUnit(): string {
  return unit.replaceAll('/usr/local/bin/cellium-agent', agentBin);
}

t.test('systemd unit', async (t) => {
  t.match(unit, /^ExecStart=\/usr\/local\/bin\/cellium-agent \$CELLIUM_AGENT_ARGS$/m);
  t.match(unit, /^KillSignal=SIGTERM$/m);
  t.match(unit, /^Restart=on-failure$/m);
  const hasAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;
  t.test('systemd-analyze verify', { skip: hasAnalyze ? false : 'systemd-analyze not installed' }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cellium-unit-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'cellium-agent.service');
    writeFileSync(file, localUnit());
    const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
    t.equal(r.status, 0, r.stderr);
    t.equal(r.stderr.trim(), '', 'no warnings');
  });
  t.test('ExecStart runs the agent, which stops cleanly on the unit\'s KillSignal', { skip: built ? false : 'dist/ not built' }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cellium-unit-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const exec = /^ExecStart=(\S+) \$CELLIUM_AGENT_ARGS$/m.exec(localUnit())![1]!;
    const p = spawn(exec, isolatedFlags(dir), { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CELLIUM_LOG_LEVEL: 'info' } });
    const { code, err } = await stopOnceStarted(p, 'SIGTERM');
    t.equal(code, 0, err);
  });
});

t.test('DaemonSet', async (t) => {
  const docs = parseAllDocuments(readFileSync(join(root, 'deploy/daemonset.yaml'), 'utf8')).map((d) => d.toJS() as Record<string, any>); // eslint-disable-line @typescript-eslint/no-explicit-any
  const ds = docs.find((d) => d.kind === 'DaemonSet')!;
  t.ok(ds, 'has a DaemonSet');
  const spec = ds.spec.template.spec;
  t.equal(spec.hostNetwork, true);
  const agent = spec.containers.find((c: { name: string }) => c.name === 'cellium-agent');
  t.equal(agent.securityContext.privileged, true);
  const mounts = new Map(agent.volumeMounts.map((m: { name: string; mountPath: string }) => [m.mountPath, m.name]));
  for (const p of ['/sys/fs/bpf', '/var/run/cellium', '/opt/cni/bin', '/etc/cni/net.d']) t.ok(mounts.has(p), `mounts ${p}`);
  const volumes = new Map(spec.volumes.map((v: { name: string; hostPath: { path: string } }) => [v.name, v.hostPath.path]));
  t.equal(volumes.get(mounts.get('/sys/fs/bpf')), '/sys/fs/bpf', 'bpffs from the host');
  const init = spec.initContainers[0];
  t.same(init.command.slice(0, 2), ['cellium', 'install-cni']);
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  const image = spawnSync('bash', [join(root, 'scripts/image.sh'), '--print-name'], { encoding: 'utf8' }).stdout.trim();
  t.equal(image, `localhost/cellium:${version}`, 'npm run image tags the image with package.json\'s version');
  for (const c of [init, agent]) t.equal(c.image, image, `${c.name} runs the image npm run image builds`);
  t.test('every agent flag in the DaemonSet is a real flag', { skip: built ? false : 'dist/ not built' }, async (t) => {
    for (const a of agent.args as string[]) {
      const flag = /^--([a-z0-9-]+)=/.exec(a)?.[1];
      t.ok(flag && agentFlags.has(flag), `${a} is a flag of cellium-agent`);
    }
  });
});

t.test('RBAC: the DaemonSet\'s ServiceAccount is bound to a least-privilege ClusterRole', async (t) => {
  type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const load = (f: string): Doc[] => parseAllDocuments(readFileSync(join(root, f), 'utf8')).map((d) => d.toJS() as Doc);
  const ds = load('deploy/daemonset.yaml');
  const daemonSet = ds.find((d) => d.kind === 'DaemonSet')!;
  const saName = daemonSet.spec.template.spec.serviceAccountName;
  const sa = ds.find((d) => d.kind === 'ServiceAccount');
  t.same([sa?.metadata.name, sa?.metadata.namespace], [saName, daemonSet.metadata.namespace], 'the DaemonSet\'s ServiceAccount is defined next to it');
  const rbac = load('deploy/rbac.yaml');
  const role = rbac.find((d) => d.kind === 'ClusterRole')!;
  const binding = rbac.find((d) => d.kind === 'ClusterRoleBinding')!;
  t.same(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata.name });
  t.same(binding.subjects, [{ kind: 'ServiceAccount', name: saName, namespace: daemonSet.metadata.namespace }], 'bound to exactly that ServiceAccount');
  const rules = role.rules as { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];
  for (const r of rules) {
    t.notOk([...r.apiGroups, ...r.resources, ...r.verbs].includes('*'), `no wildcard in ${r.resources.join(',')}`);
    t.notOk(r.resources.some((x) => ['secrets', 'serviceaccounts/token', 'clusterroles', 'clusterrolebindings'].includes(x)), `no secrets or RBAC in ${r.resources.join(',')}`);
    t.notOk(r.verbs.some((v) => ['escalate', 'bind', 'impersonate', 'deletecollection'].includes(v)), `no escalation verbs in ${r.resources.join(',')}`);
    if (!r.apiGroups.includes('cilium.io')) {
      const writes = r.verbs.filter((v) => !['get', 'list', 'watch'].includes(v));
      const mayWrite = ['customresourcedefinitions', 'events', 'leases'];
      if (writes.length > 0) t.ok(r.resources.every((x) => mayWrite.includes(x)), `writes (${writes.join(',')}) only to CRDs, events and leases, not ${r.resources.join(',')}`);
    }
  }
  const crds = readdirSync(join(root, 'deploy/crds')).map((f) => load(`deploy/crds/${f}`)[0]!);
  const crdNames = crds.map((c) => c.metadata.name as string).sort();
  t.same(crdNames, ['ciliumclusterwidenetworkpolicies.cilium.io', 'ciliumendpoints.cilium.io', 'ciliumidentities.cilium.io', 'ciliumnetworkpolicies.cilium.io', 'ciliumnodes.cilium.io']);
  const crdUpdate = rules.find((r) => r.resources.includes('customresourcedefinitions') && r.verbs.includes('update'));
  t.same([...(crdUpdate?.resourceNames ?? [])].sort(), crdNames, 'CRD updates only of the shipped CRDs, by name');
  const ciliumResources = new Set(rules.filter((r) => r.apiGroups.includes('cilium.io')).flatMap((r) => r.resources).map((x) => x.replace(/\/status$/, '')));
  t.same([...ciliumResources].sort(), crds.map((c) => c.spec.names.plural as string).sort(), 'cilium.io rules name exactly the shipped CRDs');
  for (const c of crds) t.equal(c.spec.group, 'cilium.io', `${c.metadata.name}: group cilium.io`);
  const files = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] }).files;
  t.ok(files.includes('deploy/crds/*.yaml'), 'the package ships deploy/crds (ensureCrds reads them)');
});
