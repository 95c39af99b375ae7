/** Errors of the kvstore cell, each naming the field or the condition and the fix. */
import { etcdConfigProblem } from '../../lib/etcd-config.js';

/** What went wrong. */
export type KVStoreErrorCode = 'config' | 'unavailable' | 'disabled' | 'conflict';

/** A kvstore error. */
export class KVStoreError extends Error {
  override readonly name = 'KVStoreError';
  constructor(
    readonly code: KVStoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A flag of the kvstore cell has a bad value. */
export function badFlag(flag: string, value: string, why: string): KVStoreError {
  return new KVStoreError('config', `--${flag}=${JSON.stringify(value)}: ${why}`);
}

/** The etcd config file (--kvstore-opt=etcd.config=FILE) cannot be used. */
export function badEtcdConfig(file: string, field: string, why: string): KVStoreError {
  return new KVStoreError('config', etcdConfigProblem(file, field, why));
}

/** etcd did not answer. */
export function unavailable(what: string, err: unknown): KVStoreError {
  return new KVStoreError('unavailable', `kvstore: ${what} failed: ${(err as Error)?.message ?? String(err)}; check that etcd is running and reachable (cellium status shows the kvstore line)`, { cause: err });
}

/** The agent runs without a kvstore. */
export function disabled(what: string): KVStoreError {
  return new KVStoreError('disabled', `${what} needs a kvstore: start the agent with --kvstore=etcd --kvstore-opt=etcd.config=FILE`);
}
