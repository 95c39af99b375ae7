/** Errors of the explain cell: every one names the field of the input (a JSON pointer) and the fix. */

/** What went wrong: the input is `invalid` (400), or what it names is `not-found` (404). */
export type ExplainErrorCode = 'invalid' | 'not-found';

/** An explain error; `pointer` is the JSON pointer of the offending field of the request body. */
export class ExplainError extends Error {
  override readonly name = 'ExplainError';
  constructor(
    readonly code: ExplainErrorCode,
    readonly pointer: string,
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`cannot explain the flow: ${pointer || '/'}: ${problem}; fix: ${fix}`);
  }
}

/** A field of the flow that is missing or malformed. */
export function badFlowField(pointer: string, problem: string, fix: string): ExplainError {
  return new ExplainError('invalid', pointer, problem, fix);
}

/** A flow that is not a drop. */
export function notADrop(verdict: string): ExplainError {
  return new ExplainError('invalid', '/flow/verdict', `the flow's verdict is ${verdict}, not DROPPED: only a dropped flow has a decision to explain`,
    'give a dropped flow (hubble observe --verdict DROPPED -o json), or its pods with cellium explain --from/--to');
}

/** A side of the flow the agent knows nothing about (no identity it knows, no labels in the flow). */
export function unknownSide(pointer: string, identity: number): ExplainError {
  return new ExplainError('not-found', pointer, `identity ${identity} is not known to the agent and the flow carries no labels for it`,
    'give a flow of this node while its endpoints exist (hubble observe -o json prints their labels), or add the labels to the flow');
}
