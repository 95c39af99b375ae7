/**
 * Flat strings for keys that live long. V8 builds a concatenation or template literal of 13 or
 * more characters as a tree of cons strings (a 32-byte node per `+`), and hashing it as a Map key
 * does not flatten it: a table of 100,000 such keys keeps over a million nodes, which every
 * garbage collection copies or marks. Reading a character flattens the string (V8 then copies
 * only the flat text; the collector drops the emptied cons node), which costs less than the
 * collections it saves.
 */

/** `s`, flattened in place; for strings kept as keys. */
export function flat(s: string): string {
  s.charCodeAt(0);
  return s;
}
