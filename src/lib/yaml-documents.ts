/**
 * YAML (and JSON, which YAML reads) documents as imports take them from strangers: the parser's
 * errors (syntax, a key given twice), an alias bomb (the yaml library's alias limit), nesting
 * deeper than a bound and documents that expand to too many values are one YamlInputError each,
 * never an exception from deep inside the parser (a 500 instead of a 400).
 */
import { parseAllDocuments } from 'yaml';
import { MAX_JSON_DEPTH } from './json-strict.js';

/** Most values (scalars, maps, lists) the documents of one text may expand to, aliases included. */
export const MAX_YAML_VALUES = 1_000_000;

/** A YAML text that cannot be used; `document` counts from 1, `problem` is the parser's first line or ours. */
export class YamlInputError extends Error {
  override readonly name = 'YamlInputError';
  constructor(
    readonly document: number,
    readonly problem: string,
  ) {
    super(`document ${document}: ${problem}`);
  }
}

/** What is wrong with a value's shape: nesting deeper than `maxDepth`, or more than MAX_YAML_VALUES values. */
function shapeProblem(root: unknown, maxDepth: number): string | undefined {
  const stack: Array<readonly [unknown, number]> = [[root, 1]];
  let seen = 0;
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (++seen > MAX_YAML_VALUES) return `it expands to more than ${MAX_YAML_VALUES} values`;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > maxDepth) return `it nests deeper than ${maxDepth} levels`;
    for (const child of Array.isArray(v) ? v : v instanceof Map ? v.values() : Object.values(v)) stack.push([child, depth + 1]);
  }
  return undefined;
}

/**
 * The values of the documents of `text` (empty documents left out, with their numbers);
 * throws YamlInputError naming the document and the problem (the parser's first line).
 */
export function parseYamlDocuments(text: string, maxDepth = MAX_JSON_DEPTH): Array<{ readonly document: number; readonly value: unknown }> {
  let docs;
  try {
    docs = parseAllDocuments(text, { uniqueKeys: true });
  } catch (err) {
    throw new YamlInputError(1, (err as Error).message.split('\n')[0]!);
  }
  const list = Array.isArray(docs) ? docs : [docs];
  const out: Array<{ document: number; value: unknown }> = [];
  for (const [i, d] of list.entries()) {
    const document = i + 1;
    const err = d.errors[0];
    if (err) throw new YamlInputError(document, err.message.split('\n')[0]!);
    let value: unknown;
    try {
      value = d.toJS({ maxAliasCount: 100 });
    } catch (e) {
      // the alias limit (an alias bomb), or the stack running out on deep nesting
      throw new YamlInputError(document, (e as Error).message.split('\n')[0]!);
    }
    const problem = shapeProblem(value, maxDepth);
    if (problem) throw new YamlInputError(document, problem);
    if (value !== null && value !== undefined) out.push({ document, value });
  }
  return out;
}
