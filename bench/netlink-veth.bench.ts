/**
 * Pod interface setup as a CNI ADD does it, through the netlink-native addon against the same
 * steps through `ip` commands, in the same run: veth with its peer created as eth0 in the pod
 * namespace (MTU set), host side up, pod eth0 and lo up, address, link-scope route to the gateway,
 * default route, permanent neighbour for the gateway; then deleting the veth. Everything happens in
 * two network namespaces made for the benchmark ("host" and "pod"). Needs root.
 */
import { execFileSync } from 'node:child_process';
import { Netlink } from '../src/netlink/index.js';
import { printTable, ratio, stats } from './lib/report.js';

const RUNS = 60;
const GW = '198.51.100.1';
const GW_MAC = '02:00:00:00:00:01';

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'ignore' });
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    console.log('netlink-veth: skipped, needs root (creates network namespaces and veths)');
    return;
  }
  const tag = `${process.pid}`;
  const hostNs = `clbench-h-${tag}`;
  const podNs = `clbench-p-${tag}`;
  ip('netns', 'add', hostNs);
  ip('netns', 'add', podNs);
  const podPath = `/var/run/netns/${podNs}`;
  const host = Netlink.open(`/var/run/netns/${hostNs}`);
  const setup = { ours: [] as number[], ip: [] as number[] };
  const teardown = { ours: [] as number[], ip: [] as number[] };
  try {
    for (let round = -5; round < RUNS; round++) {
      const name = `lxc${round + 5}`;
      let t0 = performance.now();
      await host.createVeth({ name, peerName: 'eth0', peerNetns: podPath, mtu: 1450 });
      await host.setUp(name);
      const pod = Netlink.open(podPath);
      await pod.setUp('lo');
      await pod.setUp('eth0');
      await pod.addAddress('eth0', '198.51.100.7/32');
      await pod.addRoute({ dst: GW, dev: 'eth0', scope: 'link' });
      await pod.addRoute({ dst: 'default', gateway: GW, dev: 'eth0' });
      await pod.addNeighbor('eth0', GW, GW_MAC);
      await pod.close();
      const oursSetup = performance.now() - t0;
      t0 = performance.now();
      await host.deleteLink(name);
      const oursDel = performance.now() - t0;

      t0 = performance.now();
      ip('-n', hostNs, 'link', 'add', name, 'mtu', '1450', 'type', 'veth', 'peer', 'name', 'eth0', 'mtu', '1450', 'netns', podNs);
      ip('-n', hostNs, 'link', 'set', name, 'up');
      ip('-n', podNs, 'link', 'set', 'lo', 'up');
      ip('-n', podNs, 'link', 'set', 'eth0', 'up');
      ip('-n', podNs, 'addr', 'add', '198.51.100.7/32', 'dev', 'eth0');
      ip('-n', podNs, 'route', 'replace', GW, 'dev', 'eth0', 'scope', 'link');
      ip('-n', podNs, 'route', 'replace', 'default', 'via', GW, 'dev', 'eth0');
      ip('-n', podNs, 'neigh', 'replace', GW, 'lladdr', GW_MAC, 'dev', 'eth0', 'nud', 'permanent');
      const ipSetup = performance.now() - t0;
      t0 = performance.now();
      ip('-n', hostNs, 'link', 'del', name);
      const ipDel = performance.now() - t0;
      if (round >= 0) {
        setup.ours.push(oursSetup);
        setup.ip.push(ipSetup);
        teardown.ours.push(oursDel);
        teardown.ip.push(ipDel);
      }
    }
  } finally {
    await host.close();
    ip('netns', 'del', podNs);
    ip('netns', 'del', hostNs);
  }
  const [so, si, to, ti] = [stats(setup.ours), stats(setup.ip), stats(teardown.ours), stats(teardown.ip)];
  printTable(`pod veth setup and deletion (${RUNS} runs each, interleaved)`, ['what', 'p50 ms', 'p99 ms', 'mean ms', 'vs ip (p50)'], [
    ['setup: netlink-native (no process)', so.p50Ms, so.p99Ms, so.meanMs, ratio(so.p50Ms, si.p50Ms)],
    ['setup: 8 ip commands (baseline)', si.p50Ms, si.p99Ms, si.meanMs, '1.00x'],
    ['delete veth: netlink-native', to.p50Ms, to.p99Ms, to.meanMs, ratio(to.p50Ms, ti.p50Ms)],
    ['delete veth: ip link del (baseline)', ti.p50Ms, ti.p99Ms, ti.meanMs, '1.00x'],
  ]);
}

await main();
