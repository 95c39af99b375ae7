// `cellium explain --apply` on a terminal asks before importing (unit: the built CLI process on a
// pseudo-terminal made by script(1), against the CLI tests' fake agent whose explain operation is
// the real explainer): "n" imports nothing (exit 1, "not imported"), "y" imports the proposal.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startFakeAgent } from '../cli/fake-agent.js';
import { cnp, dropLine, world } from './helpers.js';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'bin', 'cellium.js');
const built = existsSync(join(root, 'dist', 'src', 'cli', 'commands', 'explain.js'));

/** Runs the CLI on a pseudo-terminal, typing `answer` once it asks; resolves with its exit code and output. */
function onTerminal(args: string[], answer: string): Promise<{ code: number; out: string }> {
  const cmd = [process.execPath, bin, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const p = spawn('script', ['-qefc', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let typed = false;
  const read = (b: Buffer) => {
    out += b.toString();
    if (!typed && out.includes('Import this policy? [y/N]')) {
      typed = true;
      p.stdin.write(`${answer}\n`);
    }
  };
  p.stdout.on('data', read);
  p.stderr.on('data', read);
  const timer = setTimeout(() => p.kill(), 30000);
  return new Promise((resolve) => p.on('close', (code) => {
    clearTimeout(timer);
    p.stdin.end();
    resolve({ code: code ?? -1, out });
  }));
}

t.test('--apply asks on a terminal: n imports nothing, y imports', { skip: built ? false : 'dist/ not built (bash scripts/build.sh)' }, async (t) => {
  const w = await world(t);
  w.repo.import(cnp('web', { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] }));
  const agent = await startFakeAgent(t, {
    PostCelliumPolicyExplain: (req) => ({ status: 200, body: w.explainer.explain(req.body as never) }),
    GetPolicy: () => ({ status: 200, body: { revision: w.repo.revision, policy: JSON.stringify(w.repo.get()) } }),
    PutPolicy: (req) => {
      w.repo.import(String(req.body));
      return { status: 200, body: { revision: w.repo.revision, policy: JSON.stringify(w.repo.get()) } };
    },
    GetEndpoint: { status: 200, body: [] },
    // no endpoints: every revision is realized at once
    GetCelliumPolicyRealized: () => ({ status: 200, body: { revision: w.repo.revision, target: w.repo.revision, endpoints: 0, realized: 0, 'min-realized-revision': 0, pending: [] } }),
  });
  const dir = mkdtempSync(join(tmpdir(), 'cellium-explain-tty-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'drop.json');
  writeFileSync(file, JSON.stringify(dropLine(w, { port: 81 })));
  const args = ['--socket-path', agent.socketPath, 'explain', file, '--apply'];

  const no = await onTerminal(args, 'n');
  t.match(no.out, /\+\+\+ with the proposed policy/, 'the diff is shown first');
  t.match(no.out, /cellium: not imported/);
  t.equal(no.code, 1);
  t.equal(agent.requests('PutPolicy').length, 0, 'n: nothing imported');

  const yes = await onTerminal(args, 'y');
  t.equal(yes.code, 0, 'y: exit 0', { out: yes.out });
  t.match(yes.out, /Imported: policy revision 3, enforced by every endpoint/);
  t.equal(agent.requests('PutPolicy').length, 1, 'y: imported');
  t.equal(w.repo.trace({ identity: w.client.id }, { identity: w.web.id }, 81, 'TCP').verdict, 'allowed');
});

t.test('the flow on stdin (`-`): explained; --apply then needs --yes', { skip: built ? false : 'dist/ not built (bash scripts/build.sh)' }, async (t) => {
  const w = await world(t);
  w.repo.import(cnp('web', { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{}] }));
  const agent = await startFakeAgent(t, { PostCelliumPolicyExplain: (req) => ({ status: 200, body: w.explainer.explain(req.body as never) }) });
  const piped = (args: string[]): Promise<{ code: number; out: string; err: string }> => new Promise((resolve) => {
    const p = spawn(process.execPath, [bin, '--socket-path', agent.socketPath, 'explain', '-', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    p.on('close', (code) => resolve({ code: code ?? -1, out, err }));
    p.stdin.end(JSON.stringify(dropLine(w, { port: 81 })) + '\n');
  });
  const r = await piped(['-o', 'json']);
  t.equal(r.code, 0, r.err);
  t.match(JSON.parse(r.out), { flow: { port: 81 }, policy: { ingress: { decision: 'default-deny', sections: [{ peers: [], why: /selects no peer/ }] } } });
  const apply = await piped(['--apply']);
  t.equal(apply.code, 2);
  t.match(apply.err, /stdin is not a terminal \(or holds the flow\): add --yes/);
});
