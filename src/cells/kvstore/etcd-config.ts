/** Cilium's etcd configuration file, read with the kvstore cell's errors (the reader is src/lib/etcd-config.ts). */
import { readEtcdConfig as readEtcdConfigFile, type EtcdConfig } from '../../lib/etcd-config.js';
import { badEtcdConfig } from './errors.js';

export type { EtcdConfig };

/** Reads and checks an etcd config file; a bad one throws a KVStoreError ('config') naming the field and the fix. */
export function readEtcdConfig(file: string): EtcdConfig {
  return readEtcdConfigFile(file, badEtcdConfig);
}
