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

t.test('the privileged demo: real pods through the CNI shim, the BPF program drops and counts, cleanup', {
  skip: !built ? 'dist/ not built: run npm run build' : process.getuid?.() !== 0 ? 'needs root: the real demo plumbs network namespaces and loads BPF programs' : false,
}, async (t) => {
  const { demo } = await import('../../src/cmd/demo/main.js');
  const n = capture();
  const code = await demo(n, true);
  const all = n.text.join('\n');
  t.equal(code, 0, all);
  t.match(all, /Running as root/);
  t.equal((all.match(/passes, as expected/g) ?? []).length, 6, 'ping, tcp 80, tcp 81 pass without a policy; tcp 80 with it; ping and tcp 81 after its deletion');
  t.equal((all.match(/dropped, as expected/g) ?? []).length, 2, 'tcp 81 and ping are dropped with the policy');
  t.match(all, /^policy\s+packets=[1-9]\d* bytes=[1-9]\d*/m, 'the drop counter counted them');
  t.match(all, /Demo finished/);
  t.notOk(existsSync('/var/run/netns/cellium-demo-client') || existsSync('/var/run/netns/cellium-demo-server'), 'the pod network namespaces are gone');
  t.notOk(existsSync('/sys/fs/bpf/cellium-demo'), 'the pinned BPF objects are gone');
});
