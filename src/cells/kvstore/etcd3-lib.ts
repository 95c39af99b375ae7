/**
 * The `etcd3` library, loaded on first use: it takes ~0.5 s to import (gRPC and its protobufs),
 * which an agent without `--kvstore` and every CLI command that never talks to etcd would pay at
 * start. `etcd3` is CommonJS, so it loads synchronously where a client is first made.
 */
import { createRequire } from 'node:module';
import type * as Etcd3Lib from 'etcd3';

let lib: typeof Etcd3Lib | undefined;

/** The `etcd3` module (loaded by the first call). */
export function etcd3(): typeof Etcd3Lib {
  lib ??= createRequire(import.meta.url)('etcd3') as typeof Etcd3Lib;
  return lib;
}
