// watchAddresses against the real kernel: a process in a network namespace of the test's own
// (`ip netns exec`) watches its namespace through the addon; an address added, an IPv6 address
// deleted, a link and a route added there are each reported, and nothing is after close().
// The watch never keeps its process alive.
import { spawn, spawnSync } from 'node:child_process';
import t from 'tap';
import { addonPath } from '../../src/netlink/index.js';
import { until } from '../root-datapath-agent/fixtures.js';
import { createNetns, ip, uniq } from './netns.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces and veth pairs');

// the watcher: prints "change N" per onChange, closes the watch on "close", exits on "exit"
const WATCHER = `
const { AddressWatch } = require(${JSON.stringify(addonPath())});
let n = 0;
const w = new AddressWatch(() => console.log('change ' + ++n));
console.log('ready');
process.stdin.on('data', (d) => {
  const s = String(d);
  if (s.includes('close')) { w.close(); console.log('closed'); }
  if (s.includes('exit')) process.exit(0);
});
`;

t.test('changes of the watched namespace are reported, one call per burst, none after close', { skip }, async (t) => {
  const ns = createNetns(`cnw-${uniq()}`);
  t.teardown(ns.remove);
  ip('-n', ns.name, 'link', 'add', 'w0', 'type', 'veth', 'peer', 'name', 'w1');
  ip('-n', ns.name, 'link', 'set', 'w0', 'up');
  const proc = spawn('ip', ['netns', 'exec', ns.name, process.execPath, '-e', WATCHER], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => void (out += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on('exit', r));
  t.teardown(async () => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
    await exited;
  });
  const changes = (): number => out.split('\n').filter((l) => l.startsWith('change ')).length;
  t.ok(await until(() => out.includes('ready\n'), 10000, 20), 'the watcher runs');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(changes(), 0, 'nothing changed: nothing reported');

  ip('-n', ns.name, 'addr', 'add', '10.188.0.1/32', 'dev', 'w0');
  t.ok(await until(() => changes() >= 1, 5000, 10), 'an IPv4 address added: reported');
  let seen = changes();
  ip('-n', ns.name, '-6', 'addr', 'add', 'fd00:188::1/128', 'dev', 'w0', 'nodad');
  t.ok(await until(() => changes() > seen, 5000, 10), 'an IPv6 address added: reported');
  seen = changes();
  ip('-n', ns.name, '-6', 'addr', 'del', 'fd00:188::1/128', 'dev', 'w0');
  t.ok(await until(() => changes() > seen, 5000, 10), 'an IPv6 address deleted: reported');
  seen = changes();
  ip('-n', ns.name, 'link', 'add', 'w2', 'type', 'veth', 'peer', 'name', 'w3');
  t.ok(await until(() => changes() > seen, 5000, 10), 'a link added: reported');
  seen = changes();
  ip('-n', ns.name, 'route', 'add', 'local', '10.188.5.0/24', 'dev', 'lo');
  t.ok(await until(() => changes() > seen, 5000, 10), 'a local route added: reported');

  proc.stdin.write('close\n');
  t.ok(await until(() => out.includes('closed\n'), 5000, 10), 'closed');
  seen = changes();
  ip('-n', ns.name, 'addr', 'add', '10.188.0.2/32', 'dev', 'w0');
  ip('-n', ns.name, 'addr', 'del', '10.188.0.1/32', 'dev', 'w0');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(changes(), seen, 'nothing is reported after close()');
  proc.stdin.write('exit\n');
  t.equal(await exited, 0, 'the watcher exits cleanly');
});

t.test('a watch never keeps its process alive', async (t) => {
  const r = spawnSync(process.execPath, ['-e', `const { AddressWatch } = require(${JSON.stringify(addonPath())}); new AddressWatch(() => {}); console.log('made')`], { encoding: 'utf8', timeout: 10000 });
  t.equal(r.status, 0, 'the process exits by itself (the watch is unreferenced)');
  t.equal(r.stdout, 'made\n');
});
