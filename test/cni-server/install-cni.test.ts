// `cellium install-cni`: writes the shim and 05-cellium.conflist into the given directories (with
// the global --socket-path), is idempotent, and --uninstall removes both.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../src/cli/main.js';
import type { CliIO } from '../../src/cli/context.js';
import { buildShim, SHIM } from '../cni-shim/run-shim.js';
import { tempDir } from './helpers.js';

function io(): CliIO & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, stdout: (s) => out.push(s), stderr: (s) => err.push(s), readFile: async () => '', env: {} };
}

t.before(() => buildShim());

t.test('install, reinstall, uninstall', async (t) => {
  const dir = tempDir(t, 'install');
  const bin = join(dir, 'bin');
  const conf = join(dir, 'net.d');
  const args = ['install-cni', '--cni-bin-dir', bin, '--cni-conf-dir', conf, '--socket-path', '/run/x/cellium.sock'];
  const a = io();
  t.equal(await runCli(args, a), 0, a.err.join(''));
  t.match(a.out.join(''), /installed .*cellium-cni\n.*05-cellium.conflist\nagent socket: \/run\/x\/cellium.sock/);
  const plugin = join(bin, 'cellium-cni');
  t.same(readFileSync(plugin), readFileSync(SHIM), 'the built shim');
  t.equal(statSync(plugin).mode & 0o777, 0o755, 'executable');
  t.same(JSON.parse(readFileSync(join(conf, '05-cellium.conflist'), 'utf8')), {
    cniVersion: '1.0.0',
    name: 'cellium',
    plugins: [{ type: 'cellium-cni', 'socket-path': '/run/x/cellium.sock', 'log-file': '/var/run/cellium/cellium-cni.log', 'enable-debug': false }],
  });
  t.equal(await runCli(args, io()), 0, 'installing again replaces the files');
  const j = io();
  t.equal(await runCli(['-o', 'json', 'install-cni', '--cni-bin-dir', bin, '--cni-conf-dir', conf, '--uninstall'], j), 0);
  t.same(JSON.parse(j.out.join('')), { removed: [plugin, join(conf, '05-cellium.conflist')] });
  t.notOk(existsSync(plugin));
  t.notOk(existsSync(join(conf, '05-cellium.conflist')));
  const again = io();
  t.equal(await runCli(['install-cni', '--cni-bin-dir', bin, '--cni-conf-dir', conf, '--uninstall'], again), 0);
  t.equal(again.out.join(''), 'nothing to remove\n');
});

t.test('the socket defaults to the CLI default; help names the defaults', async (t) => {
  const dir = tempDir(t, 'install-default');
  const a = { ...io(), env: { CELLIUM_SOCK: '/run/y/agent.sock' } };
  t.equal(await runCli(['install-cni', '--cni-bin-dir', join(dir, 'b'), '--cni-conf-dir', join(dir, 'c')], a), 0, a.err.join(''));
  t.match(readFileSync(join(dir, 'c', '05-cellium.conflist'), 'utf8'), /"socket-path": "\/run\/y\/agent.sock"/);
  const h = io();
  await runCli(['install-cni', '--help'], h);
  const help = h.out.join('').replace(/\s+/g, ' ');
  t.match(help, /--cni-bin-dir <dir> CNI plugin directory \(default: "\/opt\/cni\/bin"\)/);
  t.match(help, /--cni-conf-dir <dir> CNI network configuration directory \(default: "\/etc\/cni\/net.d"\)/);
  t.match(help, /--uninstall/);
});

t.test('the shim log keys: --cni-log-file, --no-cni-log-file, --cni-debug; a relative path is refused', async (t) => {
  const dir = tempDir(t, 'install-log');
  const conf = join(dir, 'c');
  const base = ['install-cni', '--cni-bin-dir', join(dir, 'b'), '--cni-conf-dir', conf];
  const plugin = () => (JSON.parse(readFileSync(join(conf, '05-cellium.conflist'), 'utf8')) as { plugins: Record<string, unknown>[] }).plugins[0]!;
  const a = io();
  t.equal(await runCli([...base, '--cni-log-file', '/tmp/x/cni.log', '--cni-debug'], a), 0, a.err.join(''));
  t.match(plugin(), { 'log-file': '/tmp/x/cni.log', 'enable-debug': true });
  t.equal(await runCli([...base, '--no-cni-log-file'], io()), 0);
  t.notOk('log-file' in plugin(), 'no log-file key');
  t.equal(plugin()['enable-debug'], false);
  const bad = io();
  t.equal(await runCli([...base, '--cni-log-file', 'rel.log'], bad), 1);
  t.match(bad.err.join(''), /--cni-log-file "rel.log" is not an absolute path/);
  const h = io();
  await runCli(['install-cni', '--help'], h);
  t.match(h.out.join('').replace(/\s+/g, ' '), /--cni-log-file <path> .*\(default: "\/var\/run\/cellium\/cellium-cni.log"\)/);
});
