/** Errors of the policy-k8s translation: PolicyErrors naming the field (JSON pointer) and the fix. */
import { PolicyError } from '../policy/index.js';

/** An invalid field of a Kubernetes policy object. */
export function invalidObject(pointer: string, problem: string, fix: string): PolicyError {
  return new PolicyError('invalid', pointer, problem, fix);
}

/** The object is not of the kind the translation was asked for. */
export function wrongKind(got: unknown, want: string): PolicyError {
  return invalidObject('/kind', `${JSON.stringify(got)} is not ${want}`, `give a ${want}, or use the translation of its kind`);
}
