// Privileged, real BPF datapath and real netlink through the built shim (issue 11, "one owner per
// interface"): the chained takeover of the issue (an ADD whose prevResult names the pod interface
// of an existing endpoint, in that pod's namespace) is refused, and the refused container's DEL
// leaves the first endpoint's programs attached (the same program IDs) and its pod reachable. A
// program removed by hand (`tc filter del`) is found: by the BPF prune (the endpoint's BPF health
// fails until the reload re-attached it) and by the next regeneration.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { endpointPrograms } from '../../src/cells/datapath-bpf/lxc/index.js';
import { apiServerCell } from '../../src/cells/api-server/index.js';
import { cniServerCell, JOURNAL_DIR } from '../../src/cells/cni-server/index.js';
import { BpfDatapath, bpfDatapathCell } from '../../src/cells/datapath-bpf/index.js';
import { DatapathToken } from '../../src/cells/datapath/index.js';
import { EndpointManagerImplToken, datapathConfigOf } from '../../src/cells/endpoint/index.js';
import { skipUnlessBpf } from '../bpf/fixtures/topology.js';
import { CONTROL_PLANE } from '../cni-server/helpers.js';
import { buildShim, cni, conf, netns, startAgent, uniq } from './agent.js';

const POOL = '10.244.0.0/24';

interface AddResult {
  interfaces: Array<{ name: string; mac: string; sandbox?: string }>;
  ips: Array<{ address: string }>;
}

const ifIndex = (name: string): number => Number(readFileSync(`/sys/class/net/${name}/ifindex`, 'utf8'));
const pings = (ip: string): boolean => {
  try {
    execFileSync('ping', ['-c1', '-W2', ip], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

async function until(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

t.test('the chained takeover is refused; programs removed by hand are detected and re-attached', { skip: skipUnlessBpf() }, async (t) => {
  buildShim();
  const agent = await startAgent(t, POOL, {
    base: [...CONTROL_PLANE, bpfDatapathCell, apiServerCell, cniServerCell],
    config: { 'datapath-mode': 'bpf', 'bpf-map-prune-interval': '0' }, // the test runs the prune itself
  });
  const dp = agent.h.get(DatapathToken);
  t.ok(dp instanceof BpfDatapath, 'the BPF datapath');
  const mgr = agent.h.get(EndpointManagerImplToken);
  const ns = netns(t, 'own');
  const victim = { containerId: `own-a-${uniq()}`, netns: ns.path, args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=own;K8S_POD_NAME=victim' };
  const add = await cni('ADD', victim, conf(agent));
  t.equal(add.code, 0, add.stdout);
  const res = JSON.parse(add.stdout) as AddResult;
  const lxc = res.interfaces[0]!.name;
  const ip = res.ips[0]!.address.split('/')[0]!;
  const ep = mgr.lookup(`cni-attachment-id:${victim.containerId}:eth0`)!;
  const progs = endpointPrograms(ifIndex(lxc));
  t.ok(pings(ip), 'the host reaches the pod through its programs');

  const intruder = { containerId: `own-b-${uniq()}`, netns: ns.path, args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=own;K8S_POD_NAME=intruder' };
  const prevResult = { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', mac: res.interfaces[1]!.mac, sandbox: ns.path }], ips: [{ address: '10.244.0.200/32', interface: 0 }] };
  const takeover = await cni('ADD', intruder, conf(agent, { prevResult }));
  t.equal(takeover.code, 1, 'the chained ADD fails');
  const err = JSON.parse(takeover.stdout) as { code: number; msg: string };
  t.equal(err.code, 102);
  t.match(err.msg, new RegExp(`host interface ${lxc} already belongs to endpoint ${ep.id} \\(container ${victim.containerId}, interface eth0\\); one endpoint per interface`));
  t.same(mgr.getEndpoints().map((e) => e.id), [ep.id], 'no second endpoint');
  t.same(endpointPrograms(ifIndex(lxc)), progs, "the victim's programs are untouched");

  const del = await cni('DEL', intruder, conf(agent, { prevResult }));
  t.same([del.code, del.stdout], [0, ''], "the intruder's DEL succeeds");
  t.same(endpointPrograms(ifIndex(lxc)), progs, 'and leaves the very same programs on the shared interface');
  t.equal(ep.state, 'ready');
  t.same(ep.health(), { bpf: 'OK', policy: 'OK', connected: true, overallHealth: 'OK' });
  t.ok(pings(ip), 'the pod is still reachable');

  // by hand: the ingress program goes; the prune finds it
  execFileSync('tc', ['filter', 'del', 'dev', lxc, 'ingress']);
  t.same(endpointPrograms(ifIndex(lxc)).from_container, { tcx: [] }, 'nothing at tc ingress any more');
  // CNI CHECK before any prune ran: it looks at the kernel itself, not at the last prune's health
  const check = await cni('CHECK', victim, conf(agent, { prevResult: res }));
  t.equal(check.code, 1, 'CHECK fails while the program is missing');
  t.match((JSON.parse(check.stdout || '{}') as { msg?: string }).msg, new RegExp(`endpoint ${ep.id}.*no longer attached at tc ingress of ${lxc}`), 'naming the missing program', { stdout: check.stdout });
  await (dp as BpfDatapath).prune();
  await new Promise((r) => setImmediate(r));
  // the repair (a rewrite+load regeneration) may already have run by now: then its log says why it ran
  const repairedAlready = ep.log().some((l) => l.code === 'ok' && /\(rewrite\+load\) due to .*datapath program missing from its interface/.test(l.message));
  t.ok(ep.health().bpf === 'Failure' || repairedAlready, 'right after the prune found it, the endpoint is not BPF: OK (or its repair already ran)', { health: ep.health(), log: ep.log() });
  t.ok(ep.log().some((l) => l.code === 'failed' && new RegExp(`^Datapath program missing: its program from_container \\(id ${progs.from_container.legacy}\\) is no longer attached at tc ingress of ${lxc}`).test(l.message)), 'its log says what is missing');
  t.ok(await until(() => ep.health().bpf === 'OK', 10000), 'repaired');
  t.equal(endpointPrograms(ifIndex(lxc)).from_container.legacy !== undefined, true, 'a program is at tc ingress again');
  t.ok(await dp.loader.isLoaded(datapathConfigOf(ep)), 'loaded with the endpoint configuration');
  t.ok(pings(ip), 'and the pod is reachable through it');

  // by hand again, at egress: the next (periodic, no-rebuild) regeneration re-attaches it
  execFileSync('tc', ['filter', 'del', 'dev', lxc, 'egress']);
  await ep.regenerate('periodic endpoint regeneration', 'no-rebuild');
  t.ok(endpointPrograms(ifIndex(lxc)).to_container.legacy !== undefined, 'the regeneration re-attached it');
  t.equal(ep.health().bpf, 'OK');

  // a legitimate chained attachment (its own veth, made by a "previous plugin") gets programs of its
  // own; its DEL removes those and only those
  const nsC = netns(t, 'chn');
  const peer = `vch${uniq()}`;
  execFileSync('ip', ['link', 'add', peer, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', nsC.name]);
  t.teardown(() => {
    if (existsSync(`/sys/class/net/${peer}`)) execFileSync('ip', ['link', 'del', peer]);
  });
  execFileSync('ip', ['link', 'set', peer, 'up']);
  execFileSync('ip', ['-n', nsC.name, 'addr', 'add', '10.99.0.5/32', 'dev', 'eth0']);
  const chained = { containerId: `own-c-${uniq()}`, netns: nsC.path, args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=own;K8S_POD_NAME=chained' };
  const chainPrev = { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: nsC.path }], ips: [{ address: '10.99.0.5/32', interface: 0 }] };
  const chainAdd = await cni('ADD', chained, conf(agent, { prevResult: chainPrev }));
  t.equal(chainAdd.code, 0, chainAdd.stdout);
  const chainProgs = endpointPrograms(ifIndex(peer));
  t.ok(chainProgs.from_container.legacy !== undefined && chainProgs.to_container.legacy !== undefined, "the chained endpoint's programs are on its own veth");
  const victimProgs = endpointPrograms(ifIndex(lxc));
  t.same((await cni('DEL', chained, conf(agent, { prevResult: chainPrev }))).code, 0, 'the chained DEL succeeds');
  t.same(endpointPrograms(ifIndex(peer)).from_container, { tcx: [] }, 'its programs are gone');
  t.ok(existsSync(`/sys/class/net/${peer}`), "the previous plugin's veth stays");
  t.same(endpointPrograms(ifIndex(lxc)), victimProgs, "and the other endpoint's programs are untouched");

  const gone = await cni('DEL', victim, conf(agent));
  t.equal(gone.code, 0, gone.stdout);
  t.notOk(existsSync(`/sys/class/net/${lxc}`), 'DEL removes the interface');
  t.notOk(existsSync(join(agent.dir, 'state', JOURNAL_DIR, `${lxc}.json`)), 'and its journal record');
});
