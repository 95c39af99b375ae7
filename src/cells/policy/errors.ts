/** Errors of the policy cell: every one names the field (a JSON pointer) and the fix. */
import { dirname } from 'node:path';

/** What went wrong: `invalid` input (400) or `not-found` (404). */
export type PolicyErrorCode = 'invalid' | 'not-found';

/** A policy error. `pointer` is the JSON pointer of the offending field inside its document. */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
  constructor(
    readonly code: PolicyErrorCode,
    readonly pointer: string,
    readonly problem: string,
    readonly fix: string,
    /** 1-based document number for multi-document YAML input. */
    readonly document?: number,
  ) {
    super(`invalid policy${document ? ` (document ${document})` : ''} at ${pointer || '/'}: ${problem}; fix: ${fix}`);
  }
}

/** An invalid field of a policy. */
export function invalidField(pointer: string, problem: string, fix: string): PolicyError {
  return new PolicyError('invalid', pointer, problem, fix);
}

/** Input that is neither JSON nor YAML. */
export function unparsable(why: string): PolicyError {
  return new PolicyError('invalid', '', `not JSON or YAML (${why})`, 'send a CiliumNetworkPolicy, a CiliumClusterwideNetworkPolicy, a List of them or a JSON array of rules');
}

/** A trace subject that is not a known identity. */
export function unknownIdentity(pointer: string, id: number): PolicyError {
  return new PolicyError('not-found', pointer, `identity ${id} is not known`, 'give an allocated identity number or the labels of the endpoint');
}

/** Adds the document number to an error raised while reading one document. */
export function inDocument(err: PolicyError, document: number): PolicyError {
  return new PolicyError(err.code, err.pointer, err.problem, err.fix, document);
}

/** The policy store (`<state-dir>/policies.json`) could not be read or written. */
export class PolicyStoreError extends Error {
  override readonly name = 'PolicyStoreError';
  constructor(
    /** The store's path. */
    readonly file: string,
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`policy store ${file}: ${problem}; fix: ${fix}`);
  }
}

/**
 * The store exists but cannot be used: the agent stops rather than start with an empty repository
 * (every endpoint would regenerate without its policy).
 */
export function storeUnreadable(file: string, problem: string): PolicyStoreError {
  return new PolicyStoreError(
    file,
    `${problem}; the agent does not start with an empty policy repository while the store exists`,
    `restore ${file} from a backup, or move it aside (mv ${file} ${file}.bad) and create it empty ` +
      `(printf '{"version":1,"revision":1,"rules":[],"cidrIdentities":{}}\\n' > ${file}) to start with no policy rules and import them again`,
  );
}

/** A change could not be made durable: it is not applied. */
export function storeWriteFailed(file: string, problem: string): PolicyStoreError {
  return new PolicyStoreError(file, `cannot write the policy store (${problem}); the change was not applied`, `make ${dirname(file)} writable (free space, permissions, a read-write mount) and send the change again`);
}
