// The k8s cell's client from its flags: disabled without any, each bad value refused naming the
// flag and the fix, --k8s-api-server overriding the kubeconfig's server; a Resource of a disabled
// client is refused. No apiserver needed.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testLifecycle } from '../../src/hive/testing.js';
import { silentLogger } from '../../src/hive/logger.js';
import { HealthRegistry } from '../../src/hive/health.js';
import { K8sError, newK8sClient, newResource } from '../../src/cells/k8s/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-client-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const kubeconfig = join(dir, 'kubeconfig');
writeFileSync(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443" } }]
users: [{ name: u, user: { token: "abc" } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`);
const noContext = join(dir, 'no-context');
writeFileSync(noContext, 'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n');
const noEnv = {};

t.test('no flags, not in a pod: disabled', async (t) => {
  const c = newK8sClient({ k8sKubeconfigPath: '', k8sApiServer: '' }, noEnv);
  t.equal(c.enabled, false);
  t.throws(() => c.kubeConfig(), /needs Kubernetes: start the agent with --k8s-kubeconfig-path=FILE/);
  const health = new HealthRegistry();
  t.throws(() => newResource(c, testLifecycle(t), health.scopeAt(['k8s']), silentLogger(), 'pods', { path: '/api/v1/pods' }),
    /the pods resource needs Kubernetes/, 'a Resource of a disabled client is refused');
});

t.test('a kubeconfig: its server, or --k8s-api-server instead', async (t) => {
  const c = newK8sClient({ k8sKubeconfigPath: kubeconfig, k8sApiServer: '' }, noEnv);
  t.equal(c.enabled, true);
  t.equal(c.server, 'https://127.0.0.1:6443');
  const o = newK8sClient({ k8sKubeconfigPath: kubeconfig, k8sApiServer: 'https://10.0.0.1:443/' }, noEnv);
  t.equal(o.server, 'https://10.0.0.1:443');
  t.equal(o.kubeConfig().getCurrentCluster()?.server, 'https://10.0.0.1:443', 'the requests go to the override');
  t.equal(o.kubeConfig().getCurrentUser()?.token, 'abc', 'with the kubeconfig\'s credentials');
});

t.test('bad values name the flag and the fix', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ k8sKubeconfigPath: join(dir, 'missing') }, /--k8s-kubeconfig-path=".*missing": no such file/],
    [{ k8sKubeconfigPath: noContext }, /--k8s-kubeconfig-path=".*no-context": the kubeconfig has no current context with a cluster: set current-context/],
    [{ k8sApiServer: 'https://10.0.0.1' }, /--k8s-api-server="https:\/\/10.0.0.1": needs credentials: give --k8s-kubeconfig-path=FILE too/],
    [{ k8sKubeconfigPath: kubeconfig, k8sApiServer: 'not a url' }, /--k8s-api-server="not a url": not a URL: give https:\/\/host:port/],
    [{ k8sKubeconfigPath: kubeconfig, k8sApiServer: 'ftp://x' }, /--k8s-api-server="ftp:\/\/x": give an https:\/\/ \(or http:\/\/\) URL/],
  ];
  for (const [flags, msg] of cases) {
    const err = t.throws(() => newK8sClient({ k8sKubeconfigPath: '', k8sApiServer: '', ...flags }, noEnv), msg) as unknown;
    t.ok(err instanceof K8sError && err.code === 'config', 'a config error');
  }
});
