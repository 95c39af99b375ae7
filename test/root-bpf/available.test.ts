// bpfAvailable(): ok for root here; for an unprivileged process a clear reason (checked by
// running a child as nobody, which needs root to set up).
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { TS_LOADER_ARGV } from '../loader/argv.js';
import { bpfAvailable } from '../../src/bpf/index.js';
import { skipUnlessBpf } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();

t.test('available as root, with a reason when unprivileged', { skip }, async (t) => {
  t.strictSame(bpfAvailable(), { ok: true });
  const index = pathToFileURL(fileURLToPath(new URL('../../src/bpf/index.ts', import.meta.url))).href;
  const out = execFileSync('setpriv', [
    '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, ...TS_LOADER_ARGV, '--input-type=module', '-e',
    `const m = await import(${JSON.stringify(index)}); console.log(JSON.stringify(m.bpfAvailable()));`,
  ], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const res = JSON.parse(out.trim().split('\n').at(-1)!) as { ok: boolean; reason?: string };
  t.equal(res.ok, false, 'an unprivileged process cannot use BPF');
  t.match(res.reason, /needs root or CAP_BPF/);
});
