// Helpers of the BPF datapath cell tests: a BpfDatapath on a per-test BPF root (removed at the
// end), a host-side veth, and the reason these privileged tests skip without root or BPF.
import { silentLogger, type TestLike } from '../../src/hive/index.js';
import { BpfDatapath, bpfDatapathConfigSchema, type BpfDatapathConfig } from '../../src/cells/datapath-bpf/index.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';
import { ip, ipJson, uniq } from '../root-netlink/netns.js';

export { skipUnlessBpf };

/** The cell's defaults with a fresh BPF root, small conntrack maps (the defaults preallocate ~200 MB) and the given overrides. */
export function bpfConfig(t: TestLike, over: Partial<BpfDatapathConfig> = {}): BpfDatapathConfig {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const defaults = Object.fromEntries(Object.entries(bpfDatapathConfigSchema).map(([k, f]) => [k, f.default])) as unknown as BpfDatapathConfig;
  return { ...defaults, bpfRoot: root, bpfCtGlobalTcpMax: 1024, bpfCtGlobalAnyMax: 1024, ...over };
}

/** A started BpfDatapath (stopped at the end), with fast retries. */
export function startedDatapath(t: TestLike, over: Partial<BpfDatapathConfig> = {}): BpfDatapath {
  const dp = new BpfDatapath(bpfConfig(t, over), silentLogger(), { retryMinMs: 20, retryMaxMs: 200 });
  dp.start();
  t.teardown(() => dp.stop());
  return dp;
}

/** A veth whose host side (`lxc…`) stays in this network namespace; removed at the end. */
export function hostVeth(t: TestLike): { ifName: string; ifIndex: number; mac: string } {
  const ifName = `lxct${uniq()}`;
  ip('link', 'add', ifName, 'type', 'veth', 'peer', 'name', `pt${ifName.slice(4)}`);
  t.teardown(() => {
    try {
      ip('link', 'del', ifName);
    } catch {
      // already gone (the test removed it)
    }
  });
  ip('link', 'set', ifName, 'up');
  const [link] = ipJson<{ ifindex: number; address: string }>('link', 'show', ifName);
  return { ifName, ifIndex: link!.ifindex, mac: link!.address };
}
