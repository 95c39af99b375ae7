// Fail closed across agent restarts in Kubernetes mode, on real packets (root, BPF datapath, the
// built agent process with its ServiceAccount's token, a real apiserver): app=client may reach
// app=server on TCP 80 (a NetworkPolicy). The agent is killed (SIGKILL); while it is down that
// policy is deleted and one allowing TC 81 added; restarted, it enforces exactly the apiserver's
// state (81 open, 80 closed, `cellium policy get` shows only the new one). Then killed again and
// started while the apiserver is down: it starts, enforces what it restored and reports degraded,
// and catches up once the apiserver is back. Throughout, packets denied in every state never pass:
// app=bad's pings (every 50 ms) and client connects to TCP 83.
import t from 'tap';
import { agentProcessSkip, connects } from '../root-datapath-agent/fixtures.js';
import { k8sSkip } from './cluster.js';
import { allowPort, setUp, untilPorts, watchDenied } from './enforcement.js';
import { kubectlOk, until } from './util.js';

const skip = agentProcessSkip() || k8sSkip({ root: true });
const PORTS = [80, 81];

t.test('agent killed, a NetworkPolicy deleted and one added while it is down, restarted: the apiserver\'s state, nothing denied passes', { skip }, async (t) => {
  const e = await setUp(t, '10.247.24.0/24', [allowPort('allow-80', 80)]);
  const diag = async (): Promise<unknown> => ({
    policy: await e.ap.client.getPolicy([]).catch((err: Error) => err.message),
    endpoints: (await e.ap.client.listEndpoints()).map((x) => [x.id, x.status?.state, x.status?.identity?.labels, x.status?.policy?.realized?.['policy-enabled']]),
    log: e.agent.log().slice(-4000),
  });
  t.ok(await untilPorts(e, PORTS, [80], 20_000), 'running: client reaches server on 80 only', { diag: await diag() });
  t.notOk(await connects(e.bad, e.server, 80), 'app=bad does not reach it');
  const denied = watchDenied(e, 83);
  await until('the denied probes to run', () => denied.passed().probes >= 3, 30_000);

  e.agent.proc.kill('SIGKILL');
  await e.agent.exited;
  await kubectlOk(e.cluster, ['delete', 'networkpolicy', 'allow-80', '-n', 'default']);
  await kubectlOk(e.cluster, ['apply', '-f', '-'], allowPort('allow-81', 81));
  await new Promise((r) => setTimeout(r, 1500));
  t.ok(await connects(e.client, e.server, 80), 'agent down: the programs it left keep enforcing (80 still open)');
  t.notOk(await connects(e.client, e.server, 81), 'agent down: 81 not open');

  e.agent = e.ap.start();
  t.ok(await e.ap.up(e.agent), 'the agent restarts', { log: e.agent.log().slice(-3000) });
  t.ok(await untilPorts(e, PORTS, [81]), 'restarted: exactly the apiserver\'s state (81 open, 80 closed)', { log: e.agent.log().slice(-3000) });
  const policy = JSON.stringify(await e.ap.client.getPolicy([]));
  t.match(policy, /io\.cilium\.k8s\.policy\.name=allow-81/, 'the policy added while down is in the repository');
  t.notMatch(policy, /io\.cilium\.k8s\.policy\.name=allow-80/, 'the one deleted while down is gone');
  t.match(e.agent.log(), /Kubernetes policy caches synced/, 'applied once the caches synced');
  t.same(denied.passed().pings + denied.passed().connects, 0, 'nothing denied passed so far');

  // killed again; started while the apiserver is down
  e.agent.proc.kill('SIGKILL');
  await e.agent.exited;
  const restartApiserver = await e.cluster.killApiserver();
  e.agent = e.ap.start();
  t.ok(await e.ap.up(e.agent), 'the agent starts without the apiserver', { log: e.agent.log().slice(-3000) });
  const st = await until('the status to say what is not synced', async () => {
    const s = await e.ap.client.status();
    return s.kubernetes?.state === 'Warning' && /not synced: /.test(s.kubernetes.msg ?? '') && /k8s-resources\//.test(s.cilium?.msg ?? '') ? s : undefined;
  }, 30_000);
  t.match(st.kubernetes?.msg, /0\/9 resources synced/, `cellium status: ${st.kubernetes?.msg}`);
  t.match(st.cilium?.state, /Warning|Failure/, 'the agent state is degraded, naming the resources');
  await until('the endpoints restored', async () => (await e.ap.client.listEndpoints()).length === 3 && (await e.ap.client.listEndpoints()).every((x) => x.status?.state === 'ready'), 60_000);
  t.ok(await untilPorts(e, PORTS, [81], 5_000), 'apiserver down: the restored state is enforced');
  await restartApiserver();
  await until('the status Ok once the apiserver is back', async () => (await e.ap.client.status()).kubernetes?.state === 'Ok', 90_000);
  t.ok(await untilPorts(e, PORTS, [81], 5_000), 'synced again: the same state');

  await denied.stop();
  const passed = denied.passed();
  t.ok(passed.probes > 10, `the denied traffic was probed the whole time (${passed.probes} connects)`);
  t.same({ pings: passed.pings, connects: passed.connects }, { pings: 0, connects: 0 }, 'no denied packet passed at any moment');
});
