/**
 * The kvstore cell (module `kvstore`): Cilium's kvstore mode on etcd. `--kvstore=etcd` with
 * `--kvstore-opt=etcd.config=FILE` connects to etcd (TLS from the file), keeps a session lease
 * (`--kvstore-lease-ttl`) and reports `etcd: N/M connected` in the status and the health tree.
 * Without `--kvstore` it is disabled and the agent is a single node.
 */
export * from './types.js';
export { KVStoreConfigToken, kvstoreConfigSchema, kvstoreOpt, KVSTORE_KINDS, type KVStoreConfig } from './config.js';
export { readEtcdConfig, type EtcdConfig } from './etcd-config.js';
export { EtcdKVStore, CALL_TIMEOUT_MS } from './client.js';
export { EtcdIdentityBackend, sortedList, parseSortedList } from './identity-backend.js';
export { KVIdentityGC, GC_LOCK, type GCRound } from './identity-gc.js';
export { PrefixMirror, type MirrorEvent } from './mirror.js';
export { KVStoreError, type KVStoreErrorCode } from './errors.js';
export * from './cell.js';
