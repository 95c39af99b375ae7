// The kvstore tests' etcd: bench/lib/etcd.ts's launcher (Debian's etcd on loopback, free ports,
// temporary data, stopped by PID), stopped and removed at the test's teardown.
import { launchEtcd, type EtcdTls, type TestEtcd } from '../../bench/lib/etcd.js';

export { etcdSkip, freePort, makeTls, ETCD_BIN, type EtcdTls, type TestEtcd } from '../../bench/lib/etcd.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Starts etcd for a test; it is stopped and its data removed at the test's teardown. */
export async function startEtcd(t: Teardown, opts: { tls?: EtcdTls } = {}): Promise<TestEtcd> {
  const etcd = await launchEtcd(opts);
  t.teardown(() => etcd.close());
  return etcd;
}
