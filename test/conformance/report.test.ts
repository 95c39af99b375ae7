// The reading of ginkgo's JSON report into the lines `npm run conformance` prints (report.ts,
// report-cli.ts): which specs count, how each outcome and reason reads, the last line, and the
// agent's CPU and RSS from the sampler's lines. The report here has ginkgo's shape (types.Report).
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatLine, readReport, ReportError, results, summaryLine, type GinkgoSpec } from './report.js';
import { agentUse } from './report-cli.js';

const NETPOL = '[sig-network] Netpol';
const spec = (containers: string[], text: string, state: string, seconds: number, message?: string, type = 'It'): GinkgoSpec => ({
  ContainerHierarchyTexts: containers,
  LeafNodeType: type,
  LeafNodeText: text,
  State: state,
  RunTime: seconds * 1e9,
  ...(message === undefined ? {} : { Failure: { Message: message } }),
});

const report = [
  {
    SuiteDescription: 'Kubernetes e2e suite',
    SuiteSucceeded: false,
    RunTime: 100e9,
    SpecReports: [
      spec([], '', 'passed', 2, undefined, 'SynchronizedBeforeSuite'),
      spec([NETPOL, 'NetworkPolicy between server and client'], "should support a 'default-deny-ingress' policy [Feature:NetworkPolicy]", 'passed', 41.24),
      spec([NETPOL, 'NetworkPolicy between server and client'], 'should enforce policy based on Ports [Feature:NetworkPolicy]', 'failed', 90, 'Error: reachability\nmore detail'),
      spec(['[sig-network] Netpol [Feature:SCTPConnectivity][LinuxOnly]', 'NetworkPolicy between server and client using SCTP'], 'should enforce policy based on Ports [Feature:NetworkPolicy]', 'skipped', 0),
      spec(['[sig-network] Services'], 'should be able to preserve UDP traffic when server pod cycles for a NodePort service', 'skipped', 0.5, 'Requires at least 2 nodes (not 1)'),
      spec(['[sig-network] Services'], 'should respect internalTrafficPolicy=Local Pod to Pod', 'skipped', 0, 'The test requires at least two ready nodes on skeleton, but found 1'),
      spec(['[sig-storage] CSI'], 'not selected by the focus', 'skipped', 0),
      spec(['[sig-network] Services'], 'not run: neither failed nor excluded', 'skipped', 0),
      spec([], '', 'failed', 1, 'teardown went wrong', 'AfterSuite'),
    ],
  },
];

const sel = { focus: /\[sig-network\] (Netpol|Services) /, skip: /\[Feature:SCTPConnectivity\]/ };

t.test('the selected specs, each with its outcome, time and reason', async (t) => {
  const rs = results(report, sel);
  t.same(
    rs.map((r) => [r.outcome, r.seconds, r.name, r.reason, r.needsTwoNodes]),
    [
      ['PASS', 41.24, "[sig-network] Netpol NetworkPolicy between server and client should support a 'default-deny-ingress' policy [Feature:NetworkPolicy]", '', false],
      ['FAIL', 90, '[sig-network] Netpol NetworkPolicy between server and client should enforce policy based on Ports [Feature:NetworkPolicy]', 'failed: Error: reachability', false],
      [
        'SKIP',
        0,
        '[sig-network] Netpol [Feature:SCTPConnectivity][LinuxOnly] NetworkPolicy between server and client using SCTP should enforce policy based on Ports [Feature:NetworkPolicy]',
        'excluded by the suite (\\[Feature:SCTPConnectivity\\])',
        false,
      ],
      ['SKIP', 0.5, '[sig-network] Services should be able to preserve UDP traffic when server pod cycles for a NodePort service', 'Requires at least 2 nodes (not 1)', true],
      ['SKIP', 0, '[sig-network] Services should respect internalTrafficPolicy=Local Pod to Pod', 'The test requires at least two ready nodes on skeleton, but found 1', true],
      ['FAIL', 1, '[AfterSuite]', 'failed: teardown went wrong', false],
    ],
  );
  t.equal(summaryLine(rs), 'conformance: 1 passed, 2 failed, 3 skipped');
});

t.test('one line per test: outcome, seconds, full name, and why', async (t) => {
  const [pass, fail, , twoNodes] = results(report, sel);
  t.equal(formatLine(pass!), "PASS    41.2s  [sig-network] Netpol NetworkPolicy between server and client should support a 'default-deny-ingress' policy [Feature:NetworkPolicy]");
  t.match(formatLine(fail!), /^FAIL {4}90\.0s {2}\[sig-network\] Netpol .* Ports \[Feature:NetworkPolicy\] {2}-- failed: Error: reachability$/);
  t.match(formatLine(twoNodes!), /-- needs two nodes: Requires at least 2 nodes \(not 1\)$/);
});

t.test('a file that is not a ginkgo report is an error naming the file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-report-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{"not":"an array"}');
  t.throws(() => readReport(bad), ReportError);
  t.throws(() => readReport(join(dir, 'missing.json')), /missing\.json: not readable as JSON/);
  const good = join(dir, 'report.json');
  writeFileSync(good, JSON.stringify(report));
  t.equal(readReport(good).length, 1);
});

t.test("the agent's CPU and RSS over the run from the sampler's lines", async (t) => {
  const use = agentUse('100.0 10.00 204800\n101.0 10.50 409600\n\n110.0 12.00 307200\ngarbage line\n');
  t.same(use, { cpuSeconds: 2, seconds: 10, rssStartMiB: 200, rssPeakMiB: 400, rssEndMiB: 300 });
  t.equal(agentUse('100.0 10.00 204800\n'), undefined, 'one sample says nothing about use');
});
