// The kvstore tests' etcd: bench/lib/etcd.ts's launcher (Debian's etcd on loopback, free ports,
// temporary data, stopped by PID), stopped and removed at the test's teardown.
import { launchEtcd, type EtcdTls, type TestEtcd } from '../../bench/lib/etcd.js';
import { needs } from '../needs.js';
export { freePort, makeTls, ETCD_BIN, type EtcdTls, type TestEtcd } from '../../bench/lib/etcd.js';

/** Why the etcd tests cannot run here (one line), or false: needs('etcd'), see test/needs.ts. */
export function etcdSkip(): string | false {
  return needs('etcd');
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Starts etcd for a test; it is stopped and its data removed at the test's teardown. */
export async function startEtcd(t: Teardown, opts: { tls?: EtcdTls } = {}): Promise<TestEtcd> {
  const etcd = await launchEtcd(opts);
  t.teardown(() => etcd.close());
  return etcd;
}
