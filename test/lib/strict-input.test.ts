// Strict JSON and safe YAML for inputs from strangers (issue 22, point 6): a key given twice, nesting
// past the bound and alias bombs are clean errors naming where, never exceptions from deep inside.
import t from 'tap';
import { JsonInputError, MAX_JSON_DEPTH, parseJsonStrict, jsonStructureProblem } from '../../src/lib/json-strict.js';
import { MAX_YAML_VALUES, parseYamlDocuments, YamlInputError } from '../../src/lib/yaml-documents.js';

t.test('JSON: duplicate keys refused with their pointer, escapes decoded, strings with braces ignored', async (t) => {
  t.same(parseJsonStrict('{"a":1,"b":[{"a":2},{"a":3}],"c":"{\\"a\\":1,\\"a\\":2}"}'), { a: 1, b: [{ a: 2 }, { a: 3 }], c: '{"a":1,"a":2}' });
  t.throws(() => parseJsonStrict('{"id":9,"id":10}'), { pointer: '/id', message: 'the key "id" is given twice in one object at /id' });
  t.throws(() => parseJsonStrict('{"x":[1,{"a~b/c":1,"a\\u007eb/c":2}]}'), { name: 'JsonInputError', pointer: '/x/1/a~0b~1c' });
  t.throws(() => parseJsonStrict('{"a":1,'), { pointer: '', name: 'JsonInputError' }, 'not JSON: the parser\'s message, no pointer');
  t.equal(jsonStructureProblem('[1,2,3]'), undefined);
});

t.test('JSON: nesting up to the bound is fine, past it refused', async (t) => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  t.doesNotThrow(() => parseJsonStrict(deep(MAX_JSON_DEPTH)));
  const err = t.throws(() => parseJsonStrict(deep(MAX_JSON_DEPTH + 1))) as unknown as JsonInputError;
  t.match(err.problem, `nests deeper than ${MAX_JSON_DEPTH} levels`);
  t.throws(() => parseJsonStrict(deep(200_000)), JsonInputError, 'very deep: still a clean error');
});

t.test('YAML: an alias bomb, deep nesting and duplicate keys are YamlInputErrors naming the document', async (t) => {
  const letters = 'abcdefghijklm';
  const bomb = `a: &a [x, x, x, x, x, x, x, x, x]\n${[...letters.slice(1)].map((l, i) => `${l}: &${l} [${Array(9).fill(`*${letters[i]}`).join(', ')}]`).join('\n')}\n`;
  t.throws(() => parseYamlDocuments(bomb), { name: 'YamlInputError', document: 1, problem: /Excessive alias count/ });
  t.throws(() => parseYamlDocuments(`ok: 1\n---\n${'['.repeat(150)}${']'.repeat(150)}\n`), { name: 'YamlInputError', document: 2, problem: /nests deeper than 100 levels|Maximum call stack/ });
  t.throws(() => parseYamlDocuments(`${'['.repeat(20_000)}${']'.repeat(20_000)}\n`), YamlInputError, 'very deep: a clean error');
  t.throws(() => parseYamlDocuments('a: 1\na: 2\n'), { name: 'YamlInputError', problem: /Map keys must be unique/ });
  t.same(parseYamlDocuments('a: 1\n---\n---\nb: [1, 2]\n'), [{ document: 1, value: { a: 1 } }, { document: 3, value: { b: [1, 2] } }], 'empty documents left out, numbers kept');
  t.ok(MAX_YAML_VALUES >= 100_000);
});
