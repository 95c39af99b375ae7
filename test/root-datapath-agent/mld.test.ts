// Privileged, BPF datapath (issue 22 point 6, MLD is not spoofing): the agent in this process and
// an IPv4-only pod (no IPv6 address of its own, IPv6 on in its kernel, as every pod). Bringing its
// eth0 up makes its kernel send MLDv2 reports to ff02::16 from the unspecified and the link-local
// address (RFC 3810); bpf_lxc passes them (as Cilium does, cilium/cilium#47645) instead of counting
// them as forged sources. What the pod sends from any other address is still dropped and counted
// as invalid-source: an echo to ff02::1 from its link-local address (only MLD is link-local
// control) and an echo from a global address it gave itself.
import t from 'tap';
import { readDropCounters } from '../../src/maps/index.js';
import { ip } from '../bpf/fixtures/topology.js';
import { Cleanup, allocatePod, bpfRoot, endpointRequest, skipReason, startBpfAgent, until, type Pod } from './fixtures.js';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const POOL = '10.139.8.0/24';

/** The pod kernel's ICMPv6 output counter `name` (/proc/net/snmp6 of its namespace). */
function sent(pod: Pod, name: string): number {
  const text = execFileSync('ip', ['netns', 'exec', pod.ns, 'cat', '/proc/net/snmp6'], { encoding: 'utf8' });
  return Number(new RegExp(`^${name}\\s+(\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
}

const invalidSource = (root: string): number => readDropCounters(root)['invalid-source']?.packets ?? 0;

/** Two echo requests from the pod (`args` after ping's), waiting a second for nothing. */
function ping(pod: Pod, ...args: string[]): void {
  spawnSync('ip', ['netns', 'exec', pod.ns, 'ping', '-6', '-n', '-c', '2', '-i', '0.2', '-W', '1', ...args], { stdio: 'ignore', timeout: 10000 });
}

t.test("a pod's MLD reports pass; forged sources are still counted", { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL);
  const pod = await allocatePod(c, agent.client, 'mld');
  await agent.client.createEndpoint(0, endpointRequest(pod, ['k8s:app=mld']));
  t.equal(readFileSync(`/proc/sys/net/ipv6/conf/${pod.hostIf}/disable_ipv6`, 'utf8').trim(), '0', 'IPv6 is on (the host side too)');

  const reports = sent(pod, 'Icmp6OutMLDv2Reports');
  const before = invalidSource(root);
  ip('-n', pod.ns, 'link', 'set', 'eth0', 'down');
  ip('-n', pod.ns, 'link', 'set', 'eth0', 'up');
  t.ok(await until(() => sent(pod, 'Icmp6OutMLDv2Reports') >= reports + 2, 10000, 200), 'the pod kernel sent MLDv2 reports', { reports, now: sent(pod, 'Icmp6OutMLDv2Reports') });
  // DAD and the reports that follow take about a second
  await new Promise((r) => setTimeout(r, 2500));
  t.equal(invalidSource(root), before, 'none counted as a forged source', { mld: sent(pod, 'Icmp6OutMLDv2Reports') - reports });

  const linkLocal = before;
  ping(pod, 'ff02::1%eth0');
  t.ok(sent(pod, 'Icmp6OutEchos') >= 2, 'echo requests to ff02::1 went out');
  t.ok(await until(() => invalidSource(root) >= linkLocal + 2, 3000, 100), 'an echo from the link-local address is a forged source (only MLD passes)');

  const global = invalidSource(root);
  ip('-n', pod.ns, '-6', 'addr', 'add', 'fd00:22::5/128', 'dev', 'eth0', 'nodad');
  ip('-n', pod.ns, '-6', 'route', 'add', 'fd00:22::1/128', 'dev', 'eth0');
  ip('-n', pod.ns, '-6', 'neigh', 'add', 'fd00:22::1', 'lladdr', pod.hostMac, 'dev', 'eth0', 'nud', 'permanent');
  ping(pod, '-I', 'fd00:22::5', 'fd00:22::1');
  t.ok(await until(() => invalidSource(root) >= global + 2, 3000, 100), 'an echo from an address the pod gave itself is counted');
});
