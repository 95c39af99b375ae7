// onTmpfs against the mount table: the file system of the nearest existing directory decides.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { onTmpfs } from '../../src/lib/tmpfs.js';

/** The fstype of the mount holding `dir` (the longest mount point that is a prefix), from /proc/self/mounts. */
function fstypeOf(dir: string): string | undefined {
  let best: { at: string; type: string } | undefined;
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, at, type] = line.split(' ');
    if (!at || !type) continue;
    const inside = at === '/' || dir === at || dir.startsWith(`${at}/`);
    if (inside && (!best || at.length >= best.at.length)) best = { at, type };
  }
  return best?.type;
}

t.test('onTmpfs agrees with the mount table, for existing and not yet existing paths', async (t) => {
  for (const dir of ['/dev/shm', tmpdir(), '/proc', '/']) {
    const want = fstypeOf(dir) === 'tmpfs';
    t.equal(onTmpfs(dir), want, `${dir} (${fstypeOf(dir)})`);
    t.equal(onTmpfs(`${dir === '/' ? '' : dir}/cellium-missing-${process.pid}/state`), want, `a directory still to be made below ${dir}`);
  }
});
