/** Errors of the k8s-identity cell, each naming the object, what failed and the fix. */
import { K8sError } from '../k8s/index.js';

/** HTTP statuses that say "not now" (the apiserver overloaded or restarting): retried until the allocation's time limit. */
const RETRYABLE = new Set([0, 429, 500, 502, 503, 504]);

/** A request on a CiliumIdentity or the GC's Lease got an error answer; a 403 names the RBAC verb and deploy/rbac.yaml. */
export class IdentityRequestError extends K8sError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super('api', message);
  }

  /** Whether trying again later may succeed. */
  get retryable(): boolean {
    return RETRYABLE.has(this.status);
  }
}

/** An error answer of `verb` on `resource` `name`. */
export function requestFailed(verb: string, resource: string, name: string, status: number, message: string): IdentityRequestError {
  if (status === 403) {
    return new IdentityRequestError(status, `kubernetes: ${verb} ${resource} ${name} is forbidden (${message}); ` +
      `the agent's ClusterRole needs verb "${verb}" on ${resource}: kubectl apply -f deploy/rbac.yaml`);
  }
  if (status === 404 && verb === 'create') {
    return new IdentityRequestError(status, `kubernetes: create ${resource} ${name}: 404 ${message}; the CRD is not installed: ` +
      'let the agent register it (no --skip-crd-creation) or kubectl apply -f deploy/crds/, or use --identity-allocation-mode=kvstore');
  }
  return new IdentityRequestError(status, `kubernetes: ${verb} ${resource} ${name} failed: ${status} ${message}; check that the apiserver is reachable`);
}

/** The apiserver did not answer at all (connection refused, no answer in time). */
export function noAnswer(verb: string, resource: string, name: string, cause: unknown): IdentityRequestError {
  const why = ((cause as Error)?.message ?? String(cause)).replace(/; check that the apiserver is reachable$/, '');
  const e = new IdentityRequestError(0, `kubernetes: ${verb} ${resource} ${name}: no answer (${why}); check that the apiserver is reachable`);
  e.cause = cause;
  return e;
}

/** A CiliumIdentity of the number exists with labels that are not the object's own (hand-written, or a bad name). */
export function badIdentityObject(name: string, why: string): K8sError {
  return new K8sError('api', `kubernetes: CiliumIdentity ${name} is ignored: ${why}; fix or delete it (kubectl delete ciliumidentity ${name})`);
}

/** The journal of held identities exists but cannot be read. */
export function badJournal(file: string, why: string): K8sError {
  return new K8sError('config', `identity journal ${file} is unreadable (${why}): move it aside (mv ${file} ${file}.bad) and start again; restored endpoints then take their identities from the apiserver once it answers`);
}
