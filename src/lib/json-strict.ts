/**
 * JSON as an API takes it from strangers: JSON.parse, then one pass over the (now known valid)
 * text refusing a key given twice in one object (JSON.parse silently keeps the last, so what a
 * proxy or an auditor reads could differ from what the agent applies) and nesting deeper than a
 * bound (recursive code further on would run out of stack: a 500 instead of a 400).
 */

/** Nesting depth (objects and arrays) accepted by default: far beyond any model of the API or any Kubernetes object. */
export const MAX_JSON_DEPTH = 100;

/** A JSON text that does not parse, repeats a key, or nests too deep; `pointer` is where (JSON pointer). */
export class JsonInputError extends Error {
  override readonly name = 'JsonInputError';
  constructor(
    readonly pointer: string,
    readonly problem: string,
  ) {
    super(`${problem}${pointer ? ` at ${pointer}` : ''}`);
  }
}

const escapeToken = (t: string | number): string => String(t).replace(/~/g, '~0').replace(/\//g, '~1');

interface Level {
  readonly keys?: Set<string>;
  /** The current member: the key of an object, the index of an array. */
  at: string | number;
  expectKey: boolean;
}

/** Where the innermost container sits (the pointer of its parent's current member, up the stack). */
function pointerOf(stack: readonly Level[], upTo: number): string {
  return stack.slice(0, upTo).map((l) => `/${escapeToken(l.at)}`).join('');
}

/** The problem of a valid JSON text (a duplicate key, nesting over `maxDepth`), or undefined. */
export function jsonStructureProblem(text: string, maxDepth = MAX_JSON_DEPTH): JsonInputError | undefined {
  const stack: Level[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      let escaped = false;
      while (text.charCodeAt(j) !== 0x22) {
        if (text.charCodeAt(j) === 0x5c) {
          escaped = true;
          j++;
        }
        j++;
      }
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j);
        if (top.keys.has(key)) return new JsonInputError(`${pointerOf(stack, stack.length - 1)}/${escapeToken(key)}`, `the key ${JSON.stringify(key)} is given twice in one object`);
        top.keys.add(key);
        top.at = key;
        top.expectKey = false;
      }
      i = j;
    } else if (c === 0x7b || c === 0x5b) {
      if (stack.length >= maxDepth) return new JsonInputError(pointerOf(stack, stack.length), `the document nests deeper than ${maxDepth} levels`);
      stack.push(c === 0x7b ? { keys: new Set(), at: '', expectKey: true } : { at: 0, expectKey: false });
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
    } else if (c === 0x2c) {
      const top = stack[stack.length - 1]!;
      if (top.keys) top.expectKey = true;
      else top.at = (top.at as number) + 1;
    }
  }
  return undefined;
}

/** Parses JSON text strictly (see the module comment); throws JsonInputError naming the problem and where. */
export function parseJsonStrict(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new JsonInputError('', (err as Error).message);
  }
  const problem = typeof value === 'object' && value !== null ? jsonStructureProblem(text, maxDepth) : undefined;
  if (problem) throw problem;
  return value;
}
