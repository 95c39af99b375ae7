import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Narrator } from '../../src/cmd/demo/runner.js';
import { needs } from '../needs.js';

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
  t.match(all, /Run as root \(sudo npm run demo\) to see the real datapath: the agent loads BPF programs/, 'says what root adds');
});

t.test('stopping the agent leaves no timer behind (the demo exits as soon as it is done)', async (t) => {
  const { stopAgent } = await import('../../src/cmd/demo/runner.js');
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  const p = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000); process.stdout.write('up')"], { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise((r) => p.stdout!.once('data', r));
  t.equal(await stopAgent(capture(), p), 0, 'the agent exits on SIGTERM');
  t.equal(timers(), before, 'the 30 s SIGKILL timer was cleared');
});

t.test('the privileged demo: real pods through the CNI shim, the BPF program drops and counts, cleanup', {
  skip: needs(['built', 'root'], 'the real demo plumbs network namespaces and loads BPF programs'),
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
  const shimLog = /--cni-log-file (\S+\/cellium-demo-\w+\/cellium-cni\.log)/.exec(all)?.[1];
  t.ok(shimLog, "the shim's call log goes to the demo's directory, not /var/run/cellium where it would outlive the demo");
  t.notOk(shimLog && existsSync(shimLog), 'and is removed with it');
});
