// The netlink library never runs a process: the addon links no fork/exec/spawn/system/popen, and a
// full CNI-style sequence raises no SIGCHLD in this process (checked against a control spawn, so no
// timing is involved) and leaves no child behind.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { Netlink, addonPath, withNetlink } from '../../src/netlink/index.js';
import { createNetns, uniq } from './netns.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces and veth pairs');

const FORBIDDEN = /^(fork|vfork|_Fork|clone|execl|execle|execlp|execv|execve|execvp|execvpe|fexecve|posix_spawnp?|system|popen)$/;

t.test('the addon imports no process-creating function', async (t) => {
  await Netlink.open().close(); // loads (and so checks the presence of) the addon
  const symbols = execFileSync('nm', ['-D', '--undefined-only', addonPath()], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/).pop()?.split('@')[0] ?? '')
    .filter(Boolean);
  t.ok(symbols.includes('socket'), 'the symbol list is real (socket is imported)');
  t.same(symbols.filter((s) => FORBIDDEN.test(s)), [], 'no fork/exec/spawn/system/popen');
});

/** Children of this process still alive (from /proc/<pid>/stat's ppid field). */
function liveChildren(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

t.test('a CNI-style sequence spawns nothing', { skip }, async (t) => {
  const id = uniq();
  const ns = createNetns(`clnl-s-${id}`); // the test may spawn `ip`; the library may not
  t.teardown(ns.remove);

  let sigchld = 0;
  const onChild = (): void => void sigchld++;
  process.on('SIGCHLD', onChild);
  t.teardown(() => void process.off('SIGCHLD', onChild));
  /** Spawns `true` and waits until its SIGCHLD has been counted. */
  const control = async (): Promise<void> => {
    const before = sigchld;
    const child = spawn('true');
    await new Promise((ok) => child.on('exit', ok));
    while (sigchld === before) await new Promise((ok) => setImmediate(ok));
  };
  await control(); // flushes the SIGCHLDs of the setup's `ip` runs
  sigchld = 0;

  await withNetlink(ns.path, async (nl) => {
    await nl.createVeth({ name: `lxc${id}`, peerName: `tmp${id}`, mtu: 1400 });
    await nl.setLink(`tmp${id}`, { name: 'eth0', mtu: 1450, up: true });
    await nl.setUp(`lxc${id}`);
    await nl.addAddress('eth0', '198.51.100.20/32');
    await nl.addRoute({ dst: '198.51.100.1', dev: 'eth0' });
    await nl.addRoute({ dst: 'default', gateway: '198.51.100.1', dev: 'eth0' });
    await nl.addNeighbor('eth0', '198.51.100.1', '02:00:00:00:00:01');
    await nl.writeSysctl('net.ipv4.conf.eth0.rp_filter', '0');
    await nl.listLinks();
    await nl.listRoutes();
    await nl.listNeighbors('eth0');
    await nl.deleteLink('eth0');
  });
  await withNetlink(undefined, (nl) => nl.getLink('lo'));
  t.same(liveChildren(), [], 'no child process is alive');

  await control();
  t.equal(sigchld, 1, 'the only SIGCHLD is the control one');
});
