/**
 * `@kubernetes/client-node`, loaded on first use: importing it costs about 0.5 s of CPU, which an
 * agent without Kubernetes (no --k8s-kubeconfig-path, not in a pod) and every CLI command would
 * pay at start. The package is ESM without top-level await, so Node's require(esm) loads it
 * synchronously where the first client is made.
 */
import { createRequire } from 'node:module';
import type * as K8sLib from '@kubernetes/client-node';

let lib: typeof K8sLib | undefined;

/** The `@kubernetes/client-node` module (loaded by the first call). */
export function k8sLib(): typeof K8sLib {
  lib ??= createRequire(import.meta.url)('@kubernetes/client-node') as typeof K8sLib;
  return lib;
}

/** Whether the library was loaded (status and tests: an agent without Kubernetes never loads it). */
export function k8sLibLoaded(): boolean {
  return lib !== undefined;
}
