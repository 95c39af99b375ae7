// Resource<T> and the k8s cell against a real apiserver (scripts/k8s.sh up): sync, watch events
// through the hive, paged lists, a real 410 after etcd compaction (relist), and a ServiceAccount
// without rights that gets nothing (not synced, degraded) until RBAC allows it.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { firstValueFrom, filter, type Observable } from 'rxjs';
import { invoke, module, provide } from '../../src/hive/cell.js';
import { HealthToken, type Health } from '../../src/hive/health.js';
import { LifecycleToken, type Lifecycle } from '../../src/hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../src/hive/logger.js';
import { testHive } from '../../src/hive/testing.js';
import { token } from '../../src/hive/token.js';
import {
  apiListWatcher, k8sCell, K8sClientToken, newK8sClient, newResource, Resource,
  type K8sClient, type ResourceEvent, type WatchEvent,
} from '../../src/cells/k8s/index.js';
import { k8sSkip, startCluster, type Cluster } from './cluster.js';

interface ConfigMap {
  metadata: { name: string; namespace: string; resourceVersion: string };
  data?: Record<string, string>;
}

const skip = k8sSkip();
const uniq = (): string => randomBytes(3).toString('hex');

/** The next event matching `pred` (bounded: the test's timeout). */
function next<T>(events: Observable<ResourceEvent<T>>, pred: (e: ResourceEvent<T>) => boolean): Promise<ResourceEvent<T>> {
  return firstValueFrom(events.pipe(filter(pred)));
}

async function kubectlOk(c: Cluster, args: string[], input?: string): Promise<string> {
  const r = await c.kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

t.test('Resource<T> on a real apiserver', { skip }, async (t) => {
  const c = await startCluster(t);
  const ns = `res-${uniq()}`;
  await kubectlOk(c, ['create', 'namespace', ns]);
  await kubectlOk(c, ['create', 'configmap', 'before', '-n', ns, '--from-literal=k=1']);

  const ConfigMapsToken = token<Resource<ConfigMap>>('TestConfigMaps');
  const testCell = module('test-configmaps', 'ConfigMaps of one namespace',
    provide(ConfigMapsToken, (client: K8sClient, lc: Lifecycle, health: Health, log: Logger) =>
      newResource<ConfigMap>(client, lc, health, log, 'configmaps', { path: `/api/v1/namespaces/${ns}/configmaps`, pageSize: 2 }),
    K8sClientToken, LifecycleToken, HealthToken, LoggerToken),
    invoke('use-configmaps', (_r: Resource<ConfigMap>) => undefined, ConfigMapsToken));
  const h = await testHive(t, [k8sCell, testCell], { config: { 'k8s-kubeconfig-path': c.kubeconfig } });
  const cms = h.get(ConfigMapsToken);
  await cms.synced;
  const store = await cms.store();
  t.equal(store.get(`${ns}/before`)?.data?.k, '1', 'the list holds what was there before');
  t.ok(store.get(`${ns}/kube-root-ca.crt`), 'and the controller-manager\'s root CA ConfigMap (the pages of 2 all came)');

  const events = cms.events();
  const created = next(events, (e) => e.kind === 'upsert' && e.key === `${ns}/after`);
  await kubectlOk(c, ['create', 'configmap', 'after', '-n', ns, '--from-literal=k=2']);
  t.equal(((await created) as { object: ConfigMap }).object.data?.k, '2', 'a created object arrives through the watch');
  const changed = next(events, (e) => e.kind === 'upsert' && e.key === `${ns}/after` && (e.object as ConfigMap).data?.k === '3');
  await kubectlOk(c, ['patch', 'configmap', 'after', '-n', ns, '-p', '{"data":{"k":"3"}}']);
  await changed;
  t.pass('a change arrives');
  const deleted = next(events, (e) => e.kind === 'delete' && e.key === `${ns}/before`);
  await kubectlOk(c, ['delete', 'configmap', 'before', '-n', ns]);
  await deleted;
  t.notOk(store.get(`${ns}/before`), 'a delete arrives and leaves the cache');
  t.same(cms.status().failures, 0, 'no failure on the way');

  // Many objects: the paged list (pageSize 2) of a fresh resource sees them all.
  for (let i = 0; i < 5; i++) await kubectlOk(c, ['create', 'configmap', `bulk-${i}`, '-n', ns]);
  const client = newK8sClient({ k8sKubeconfigPath: c.kubeconfig, k8sApiServer: '' });
  const lw = apiListWatcher<ConfigMap>(client.kubeConfig(), { path: `/api/v1/namespaces/${ns}/configmaps`, pageSize: 2 });
  const listed = await lw.list();
  t.same(listed.items.map((o) => o.metadata.name).sort(),
    ['after', 'bulk-0', 'bulk-1', 'bulk-2', 'bulk-3', 'bulk-4', 'kube-root-ca.crt'], 'seven objects over four pages');

});

t.test('a ServiceAccount without rights gets nothing until RBAC allows it', { skip }, async (t) => {
  const c = await startCluster(t);
  const ns = `sa-${uniq()}`;
  await kubectlOk(c, ['create', 'namespace', ns]);
  await kubectlOk(c, ['create', 'serviceaccount', 'agent', '-n', ns]);
  await kubectlOk(c, ['create', 'configmap', 'x', '-n', ns]);
  const tokenText = (await kubectlOk(c, ['create', 'token', 'agent', '-n', ns, '--duration', '10m'])).trim();
  const kubeconfig = join(c.dir, 'agent.kubeconfig');
  writeFileSync(kubeconfig, [
    'apiVersion: v1', 'kind: Config',
    'clusters: [{ name: c, cluster: { server: "' + c.server + '", certificate-authority: "' + c.caFile + '" } }]',
    'users: [{ name: agent, user: { token: "' + tokenText + '" } }]',
    'contexts: [{ name: agent, context: { cluster: c, user: agent } }]',
    'current-context: agent', '',
  ].join('\n'), { mode: 0o600 });

  const ConfigMapsToken = token<Resource<ConfigMap>>('TestConfigMaps');
  const errors: string[] = [];
  const testCell = module('test-configmaps', 'ConfigMaps of one namespace',
    provide(ConfigMapsToken, (client: K8sClient, lc: Lifecycle, health: Health, log: Logger) =>
      newResource<ConfigMap>(client, lc, health, log, 'configmaps', {
        path: `/api/v1/namespaces/${ns}/configmaps`, minBackoffMs: 100, maxBackoffMs: 500, onError: (e) => errors.push(e.message),
      }),
    K8sClientToken, LifecycleToken, HealthToken, LoggerToken),
    invoke('use-configmaps', (_r: Resource<ConfigMap>) => undefined, ConfigMapsToken));
  const h = await testHive(t, [k8sCell, testCell], { config: { 'k8s-kubeconfig-path': kubeconfig } });
  const cms = h.get(ConfigMapsToken);
  const deadline = Date.now() + 20_000;
  while (errors.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.match(errors[0], /403 .*forbidden.*system:serviceaccount:/, 'the list is refused, naming the account');
  t.equal(cms.status().synced, false, 'not synced: an empty cache is never presented as complete');
  t.equal(cms.status().objects, 0);

  await kubectlOk(c, ['create', 'role', 'read-cm', '-n', ns, '--verb=list,watch', '--resource=configmaps']);
  await kubectlOk(c, ['create', 'rolebinding', 'agent-read-cm', '-n', ns, '--role=read-cm', `--serviceaccount=${ns}:agent`]);
  await cms.synced;
  t.ok((await cms.store()).get(`${ns}/x`), 'once allowed, the backoff retry lists and syncs');
});

interface PodTemplate {
  metadata: { name: string; namespace: string; resourceVersion: string };
}

t.test('a real 410 Gone after etcd compaction relists', { skip }, async (t) => {
  const c = await startCluster(t);
  const ns = `gone-${uniq()}`;
  await kubectlOk(c, ['create', 'namespace', ns]);
  const template = (name: string): string => JSON.stringify({
    apiVersion: 'v1', kind: 'PodTemplate', metadata: { name, namespace: ns },
    template: { spec: { containers: [{ name: 'c', image: 'localhost/none:never' }] } },
  });
  await kubectlOk(c, ['create', '-f', '-'], template('t1'));
  const path = `/api/v1/namespaces/${ns}/podtemplates`;
  const client = newK8sClient({ k8sKubeconfigPath: c.kubeconfig, k8sApiServer: '' });

  // The adapter: a watch from a compacted version answers 410 (PodTemplates bypass the watch cache).
  const lw = apiListWatcher<PodTemplate>(client.kubeConfig(), { path });
  const before = (await lw.list()).resourceVersion;
  // Two writes elsewhere: a compaction at the newest revision then removes the one after `before`.
  await kubectlOk(c, ['create', 'configmap', 'bump-a', '-n', ns]);
  await kubectlOk(c, ['create', 'configmap', 'bump-b', '-n', ns]);
  await c.compactEtcd();
  const seen: WatchEvent<PodTemplate>[] = [];
  const w = await lw.watch(before, (e) => seen.push(e));
  await Promise.race([w.done.catch(() => undefined), new Promise((r) => setTimeout(r, 10_000))]);
  w.stop();
  const gone = seen.find((e) => e.type === 'ERROR');
  t.equal(gone?.type === 'ERROR' ? gone.status.code : undefined, 410, `a watch from compacted version ${before} answers 410 Gone`);

  // The reflector: its watch ends every second (timeoutSeconds 1) and resumes from the last
  // version it saw; once etcd is compacted past that version the resume gets 410 and it relists.
  const r = new Resource<PodTemplate>('podtemplates', apiListWatcher<PodTemplate>(client.kubeConfig(), { path, watchTimeoutSeconds: 1 }),
    { minBackoffMs: 50, maxBackoffMs: 200 });
  t.teardown(() => r.stop());
  r.start();
  await r.synced;
  t.equal(r.status().lists, 1);
  await kubectlOk(c, ['create', 'configmap', 'bump-c', '-n', ns]);
  await kubectlOk(c, ['create', 'configmap', 'bump-d', '-n', ns]);
  await c.compactEtcd();
  const deadline = Date.now() + 20_000;
  while (r.status().lists < 2 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
  t.equal(r.status().lists, 2, 'relisted after the 410');
  t.equal(r.status().failures, 0, '410 is no failure');
  const created = next(r.events(), (e) => e.kind === 'upsert' && e.key === `${ns}/t2`);
  await kubectlOk(c, ['create', '-f', '-'], template('t2'));
  await created;
  t.same((await r.store()).list().map((o) => o.metadata.name).sort(), ['t1', 't2'], 'and watches on');
});
