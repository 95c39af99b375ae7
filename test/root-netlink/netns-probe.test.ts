// probeNetns (src/netlink/netns-probe.ts): what a CNI_NETNS path names, without entering it.
// Unprivileged: files, directories, devices, a FIFO (never opened, so it cannot block), a symlink,
// this process's own namespace and a namespace of another type. As root: a namespace made with
// `ip netns add`, and PID 1's namespace seen from a process inside another namespace ("init").
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { probeNetns } from '../../src/netlink/index.js';
import { createNetns, uniq } from './netns.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces');

function canStat(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'cellium-probe-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('what is not a network namespace, and this process own one', async (t) => {
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const link = join(dir, 'link');
  symlinkSync('/etc/passwd', link);
  const cases: Array<[string, string, string | RegExp]> = [
    ['/etc/passwd', 'other', 'a regular file'],
    [link, 'other', 'a regular file'],
    ['/', 'other', 'a directory'],
    ['/dev/null', 'other', 'a character device'],
    [fifo, 'other', 'a FIFO'],
    [join(dir, 'none'), 'missing', 'does not exist'],
    ['/etc/passwd/x', 'missing', 'does not exist'],
    ['/proc/self/ns/mnt', 'other', 'a mnt namespace'],
    ['/proc/self/ns/uts', 'other', 'a uts namespace'],
    ['/proc/self/ns/net', 'own', "this process's own network namespace"],
    [`/proc/${process.pid}/ns/net`, 'own', "this process's own network namespace"],
  ];
  for (const [path, kind, what] of cases) t.match(await probeNetns(path), { kind, what }, `${path}: ${kind}`);
});

const built = resolve(import.meta.dirname, '../../dist/src/netlink/netns-probe.js');

t.test('a namespace made with ip netns add', { skip }, async (t) => {
  const ns = createNetns(`probe-${uniq()}`);
  t.teardown(ns.remove);
  t.match(await probeNetns(ns.path), { kind: 'netns', what: 'a network namespace', inode: Number }, `${ns.path} (a bind mount of nsfs)`);
});

t.test('inside another namespace: that namespace is "own", PID 1\'s is "init"', { skip: skip || (!existsSync(built) && 'runs the built probe (dist/) inside the namespace: npm run build first') }, async (t) => {
  const ns = createNetns(`probe-${uniq()}`);
  t.teardown(ns.remove);
  const script = `import(${JSON.stringify(built)}).then(async (m) => console.log(JSON.stringify([await m.probeNetns('/proc/1/ns/net'), await m.probeNetns(${JSON.stringify(ns.path)})])))`;
  const out = JSON.parse(execFileSync('ip', ['netns', 'exec', ns.name, process.execPath, '-e', script], { encoding: 'utf8' })) as Array<{ kind: string }>;
  t.match(out[1], { kind: 'own' }, 'the namespace itself is "own"');
  // /proc/1/ns/net needs ptrace access to PID 1 (no CAP_SYS_PTRACE in some sandboxes): refused either way
  if (canStat('/proc/1/ns/net')) t.match(out[0], { kind: 'init' }, 'PID 1\'s namespace is "init"');
  else t.match(out[0], { kind: 'other', what: /unreadable \(EACCES\)/ }, 'PID 1\'s namespace cannot be read here: refused as unreadable');
});
