/**
 * Several files of one `cellium service import` or `cellium policy import` are one import, all or
 * nothing: every file is read and parsed here first (nothing is sent when one cannot be read or
 * parsed), then their documents go to the agent as one `kind: List` whose items are the documents
 * in order; the agent checks the whole List before applying anything. A single file is sent as it
 * is. The agent's `/items/N` in an error is turned back into the file and document it came from.
 */
import { JsonInputError, parseJsonStrict } from '../lib/json-strict.js';
import { parseYamlDocuments, YamlInputError } from '../lib/yaml-documents.js';
import type { CliContext } from './context.js';
import { CliFailure } from './errors.js';

/** One file as the user named it and its text. */
export interface ImportFile {
  readonly name: string;
  readonly text: string;
}

/** What to send, and how to say where an agent's error points. */
export interface CombinedImport {
  readonly text: string;
  /** The message with the agent's `/items/N` (of the List) turned into `FILE document D`. */
  locate(message: string): string;
}

/** Reads every file (`-` is stdin) before anything is sent; a CliFailure naming the first that cannot be read. */
export async function readImportFiles(ctx: CliContext, files: readonly string[]): Promise<ImportFile[]> {
  const out: ImportFile[] = [];
  for (const name of files) {
    try {
      out.push({ name, text: await ctx.io.readFile(name) });
    } catch (err) {
      throw new CliFailure(`cannot read ${name}: ${(err as Error).message}; nothing was imported`);
    }
  }
  return out;
}

/** The documents of one file: JSON (one document), else YAML; a CliFailure naming the file. */
function documentsOf(f: ImportFile): unknown[] {
  try {
    return [parseJsonStrict(f.text)];
  } catch (err) {
    if (err instanceof JsonInputError && err.pointer) throw new CliFailure(`${f.name}: ${err.message}`);
  }
  try {
    return parseYamlDocuments(f.text).map((d) => d.value);
  } catch (err) {
    if (err instanceof YamlInputError) throw new CliFailure(`${f.name}: ${err.message}: not YAML or JSON`);
    throw err;
  }
}

/** The files as one import (see the module comment). */
export function combineImport(files: readonly ImportFile[]): CombinedImport {
  if (files.length === 1) return { text: files[0]!.text, locate: (m) => `${files[0]!.name}: ${m}` };
  const items: unknown[] = [];
  const origin: string[] = [];
  for (const f of files) {
    const docs = documentsOf(f);
    docs.forEach((d, i) => {
      items.push(d);
      origin.push(docs.length > 1 ? `${f.name} document ${i + 1}` : f.name);
    });
    if (docs.length === 0) throw new CliFailure(`${f.name}: no documents in the file; nothing was imported`);
  }
  return {
    text: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    locate: (m) => m.replace(/(?:document 1 )?\/items\/(\d+)(?=(\/)|[ :;]|$)/, (all, n: string, slash?: string) => (origin[Number(n)] !== undefined ? `${origin[Number(n)]}${slash ? ' ' : ''}` : all)),
  };
}

/**
 * Reads `files`, combines them into one import and sends it with `send`; an error of the agent
 * names the file and document it points into.
 */
export async function importFiles<T>(ctx: CliContext, files: readonly string[], send: (text: string) => Promise<T>): Promise<T> {
  const combined = combineImport(await readImportFiles(ctx, files));
  try {
    return await send(combined.text);
  } catch (err) {
    if (err instanceof Error) err.message = combined.locate(err.message);
    throw err;
  }
}
