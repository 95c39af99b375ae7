// The apiserver killed and restarted under a running agent, on real packets (root, BPF datapath,
// the built agent process with its ServiceAccount's token): app=client may reach app=server on TCP
// 80. kube-apiserver is killed (SIGKILL): the agent keeps running and enforcing, its resources
// report the broken watches; restarted, the watches resume (with backoff): a policy added and one
// deleted after it came back are enforced. Throughout, app=bad's pings and client connects to a
// never-allowed port get nothing through, and the agent is never restarted.
import t from 'tap';
import { agentProcessSkip } from '../root-datapath-agent/fixtures.js';
import { k8sSkip } from './cluster.js';
import { allowPort, setUp, untilPorts, watchDenied } from './enforcement.js';
import { kubectlOk, until } from './util.js';

const skip = agentProcessSkip() || k8sSkip({ root: true });
const PORTS = [80, 81, 82];

t.test('apiserver killed and restarted under the agent: nothing opened, watches resumed', { skip }, async (t) => {
  const e = await setUp(t, '10.247.25.0/24', [allowPort('allow-80', 80)]);
  t.ok(await untilPorts(e, PORTS, [80]), 'running: client reaches server on 80 only', { log: e.agent.log().slice(-3000) });
  await until('the caches synced', async () => (await e.ap.client.status()).kubernetes?.state === 'Ok', 30_000);
  const denied = watchDenied(e, 83);
  const pid = e.agent.proc.pid;

  const restart = await e.cluster.killApiserver();
  const degraded = await until('the broken watches reported', async () => {
    const s = await e.ap.client.status();
    return /k8s-resources\//.test(s.cilium?.msg ?? '') ? s : undefined;
  }, 30_000);
  t.match(degraded.cilium?.msg, /k8s-resources\/\w+/, `the agent state names the resources retrying: ${degraded.cilium?.msg?.slice(0, 300)}`);
  await new Promise((r) => setTimeout(r, 3000));
  t.ok(await untilPorts(e, PORTS, [80], 5_000), 'apiserver down: the same enforcement');

  await restart();
  await kubectlOk(e.cluster, ['apply', '-f', '-'], allowPort('allow-82', 82));
  await kubectlOk(e.cluster, ['delete', 'networkpolicy', 'allow-80', '-n', 'default']);
  t.ok(await untilPorts(e, PORTS, [82], 90_000), 'apiserver back: a policy added and one deleted after it are enforced (82 open, 80 closed)', { log: e.agent.log().slice(-3000) });
  await until('the status Ok again', async () => (await e.ap.client.status()).kubernetes?.state === 'Ok', 60_000);

  t.equal(e.agent.proc.pid, pid, 'the same agent process');
  t.equal(e.agent.proc.exitCode, null, 'it never exited');
  await denied.stop();
  const passed = denied.passed();
  t.ok(passed.probes > 5, `the denied traffic was probed the whole time (${passed.probes} connects)`);
  t.same({ pings: passed.pings, connects: passed.connects }, { pings: 0, connects: 0 }, 'no denied packet passed at any moment');
});
