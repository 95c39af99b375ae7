import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Narrator } from '../../src/cmd/demo/runner.js';

const built = existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js'));

/** A narrator that keeps everything the demo says. */
function capture(): Narrator & { text: string[] } {
  const text: string[] = [];
  return { text, step: (s) => text.push(`== ${s}`), say: (s) => text.push(s), cmd: (l, o) => text.push(`$ ${l}`, o) };
}

t.test('the unprivileged demo tells the whole story and every verdict is the expected one', { skip: built ? false : 'dist/ not built: run npm run build' }, async (t) => {
  const { demo } = await import('../../src/cmd/demo/main.js');
  const n = capture();
  const code = await demo(n, false);
  t.equal(code, 0, n.text.join('\n'));
  const all = n.text.join('\n');
  t.match(all, /Not root/);
  t.match(all, /state ready/);
  t.match(all, /Import a policy/);
  t.equal((all.match(/Verdict:\s+DENIED/g) ?? []).length, 2, 'two denied traces with the policy');
  t.match(all, /Demo finished/);
});
