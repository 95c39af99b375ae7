// Kubernetes' own sig-network e2e tests against this node, the subset CI runs (`npm run conformance
// -- --suite ci`, scripts/conformance.sh; docs/conformance.md): three NetworkPolicy tests (a
// default-deny ingress, an egress named port, policies on ports) and two Services tests (a basic
// ClusterIP endpoint reached by name, one port number over TCP and UDP), each judged by upstream
// e2e.test against a one-node cluster with kubelet, containerd and Cellium as its DaemonSet (and
// CoreDNS). Every selected test must pass.
// e2e.test and its images are built by scripts/test.sh before tap (`scripts/conformance.sh
// prepare`): a cold build outlasts tap's per-file timeout.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs } from '../needs.js';

const ROOT = join(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'conformance.sh');

/** Why e2e.test cannot be built here (no Go, no module proxy), or false; 4 (not built) runs and fails naming the build. */
function e2eSkip(): string | false {
  const r = spawnSync('bash', [SCRIPT, 'check'], { encoding: 'utf8' });
  return r.status === 3 ? `needs e2e.test: ${r.stdout.trim().replace(/^conformance: /, '')}` : false;
}

const skip = needs(['root', 'bpf', 'k8s', 'built'], 'runs kubelet, containerd and the Cellium DaemonSet') || e2eSkip();

t.setTimeout(30 * 60_000);

t.test('the CI subset of the upstream NetworkPolicy and Services e2e tests passes', { skip }, async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'conformance-ci-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const lines: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const p = spawn('bash', [SCRIPT, 'run', '--suite', 'ci', '--out', out], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (s: string) => {
      process.stderr.write(s);
      lines.push(...s.split('\n').filter((l) => l !== ''));
    });
    p.on('error', reject);
    p.on('close', resolve);
  });
  const last = lines[lines.length - 1] ?? '';
  const m = /^conformance: (\d+) passed, (\d+) failed, (\d+) skipped$/.exec(last);
  t.ok(m, `the last line is the summary: ${last}`);
  // the subset's names also select the UDP and SCTP variants, which it excludes: SKIP lines saying so
  t.same(lines.filter((l) => l.startsWith('FAIL ')), [], 'no test failed');
  t.equal(lines.filter((l) => l.startsWith('PASS ')).length, 5, 'the five tests of the subset passed');
  t.same(lines.filter((l) => l.startsWith('SKIP ') && !/ -- excluded by the suite /.test(l)), [], 'none skipped itself');
  t.equal(m?.[1], '5', 'the summary counts five passes');
  t.equal(code, 0, 'npm run conformance exits 0');
  // ginkgo's own report agrees: five specs of the run passed
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as { SpecReports: { State: string; LeafNodeType: string }[] }[];
  const passed = report.flatMap((r) => r.SpecReports).filter((s) => s.LeafNodeType === 'It' && s.State === 'passed');
  t.equal(passed.length, 5, "ginkgo's JSON report has the five passes");
});
