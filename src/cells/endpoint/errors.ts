/** Errors of the endpoint cells, with a code the API maps to a status. */

/** What went wrong: 400 invalid, 404 not-found, 409 exists, 429 rate-limited, 500 failed. */
export type EndpointErrorCode = 'invalid' | 'not-found' | 'exists' | 'rate-limited' | 'failed';

/** An endpoint error; `field` is the offending field of the request (JSON pointer) when known. */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
  constructor(
    readonly code: EndpointErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/**
 * Stored endpoints whose state cannot be read: the agent stops, since restoring without them would
 * unload their programs while their pods keep running (unenforced).
 */
export function unreadableEndpointState(bad: readonly { readonly dir: string; readonly error: string }[]): EndpointError {
  const list = bad.map((b) => `${b.dir} (${b.error})`).join('; ');
  return new EndpointError(
    'failed',
    `unreadable endpoint state: ${list}; the agent does not start without them, since their programs would be unloaded while their pods run; ` +
      'fix: restore each directory from a backup, or remove it (rm -r DIR): the endpoint is then not restored, its program is removed, and its pod must be re-created',
  );
}

/**
 * The policy store is missing while stored endpoints realized a policy revision above 1 (rules
 * existed): starting with an empty repository would let every one of their pods' traffic through.
 */
export function policyStoreMissing(file: string, endpoints: readonly number[], revision: number): EndpointError {
  return new EndpointError(
    'failed',
    `the policy store ${file} is missing, but stored endpoints ${endpoints.join(', ')} enforced policy revision ${revision} from it; ` +
      'the agent does not start with no rules in its place (their pods would lose every policy); ' +
      `fix: restore ${file} from a backup; or, to start with no rules on purpose (every pod unenforced until policies are imported again), ` +
      `create it empty: printf '{"version":1,"revision":${revision},"rules":[],"cidrIdentities":{}}\\n' > ${file}`,
  );
}

/** An endpoint address that no pod may hold (special-purpose, or the node's own). */
export function unusableAddress(raw: string, family: 'ipv4' | 'ipv6', why: string): EndpointError {
  return new EndpointError(
    'invalid',
    `invalid endpoint change request: ${raw} cannot be an endpoint address: ${why}; its program would let the pod send from it and the ipcache would give it the pod's identity; fix: use an address of the pod network (POST /v1/ipam allocates one from the node's pool)`,
    `/addressing/${family}`,
  );
}

/** An endpoint address that is one of the node's own (the host identity). */
export function hostAddressTaken(ip: string): EndpointError {
  return new EndpointError(
    'invalid',
    `endpoint address ${ip} is an address of this node: the ipcache gives it the host identity (which ingress policy lets in) and the endpoint's program would let its pod send from it; fix: use an address of the pod network (POST /v1/ipam allocates one from the node's pool)`,
    `/addressing/${ip.includes(':') ? 'ipv6' : 'ipv4'}`,
  );
}
