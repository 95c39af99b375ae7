/**
 * Ginkgo's JSON report (e2e.test --ginkgo.json-report) read into one result per test of a suite:
 * what `npm run conformance` prints (scripts/conformance.sh, docs/conformance.md).
 *
 * The report lists every spec e2e.test holds, most of them skipped because the focus did not
 * select them; those are dropped. A selected spec the suite's skip expression excluded is a SKIP
 * with that reason; one that skipped itself (e2eskipper: "Requires at least 2 nodes", a provider or
 * feature it needs) keeps its own message; a test that needs two nodes is marked so.
 */
import { readFileSync } from 'node:fs';

/** One spec of ginkgo's JSON report (the fields read here; ginkgo's types.SpecReport). */
export interface GinkgoSpec {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeType: string;
  LeafNodeText: string;
  State: string;
  RunTime: number;
  Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number } };
}

/** One suite run of ginkgo's JSON report (types.Report); the file holds an array of them. */
export interface GinkgoReport {
  SuiteDescription: string;
  SuiteSucceeded: boolean;
  RunTime: number;
  SpecReports: GinkgoSpec[] | null;
}

/** What a test came to. */
export type Outcome = 'PASS' | 'FAIL' | 'SKIP';

/** One test's line. */
export interface TestResult {
  outcome: Outcome;
  seconds: number;
  name: string;
  /** Why it failed or skipped (the first line of ginkgo's message), empty for a pass. */
  reason: string;
  /** It skipped itself because the cluster has fewer than two nodes. */
  needsTwoNodes: boolean;
}

/** Which tests a suite selects: the regular expressions handed to --ginkgo.focus and --ginkgo.skip. */
export interface Selection {
  focus: RegExp;
  skip?: RegExp;
}

/** Reading a report failed: names the file and what to do. */
export class ReportError extends Error {
  constructor(file: string, why: string) {
    super(`conformance: ${file}: ${why} (run npm run conformance again; e2e.log beside it says what e2e.test did)`);
    this.name = 'ReportError';
  }
}

const TWO_NODES = /Requires at least 2 nodes|at least (2|two)( ready)? nodes|SkipUnlessNodeCountIsAtLeast/i;

/** The full name ginkgo matches --ginkgo.focus against: the containers' texts and the spec's. */
export function fullName(spec: GinkgoSpec): string {
  return [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText].filter((s) => s !== '').join(' ');
}

function firstLine(message: string | undefined): string {
  return (message ?? '').split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
}

/** The results of the selected tests, in the report's order. Suite-level nodes count only when they failed. */
export function results(reports: GinkgoReport[], sel: Selection): TestResult[] {
  const out: TestResult[] = [];
  for (const report of reports) {
    for (const spec of report.SpecReports ?? []) {
      const name = fullName(spec);
      const seconds = spec.RunTime / 1e9;
      if (spec.LeafNodeType !== 'It') {
        // BeforeSuite, SynchronizedBeforeSuite, AfterSuite, ReportAfterSuite …: a failure there fails the run
        if (spec.State !== 'passed' && spec.State !== 'skipped') {
          out.push({ outcome: 'FAIL', seconds, name: `[${spec.LeafNodeType}] ${name}`.trim(), reason: `${spec.State}: ${firstLine(spec.Failure?.Message)}`, needsTwoNodes: false });
        }
        continue;
      }
      if (!sel.focus.test(name)) continue;
      const reason = firstLine(spec.Failure?.Message);
      if (spec.State === 'passed') {
        out.push({ outcome: 'PASS', seconds, name, reason: '', needsTwoNodes: false });
      } else if (spec.State === 'skipped' || spec.State === 'pending') {
        const excluded = reason === '' && sel.skip !== undefined && sel.skip.test(name);
        if (reason === '' && !excluded) continue; // not run at all: the focus's neighbours ginkgo lists
        out.push({
          outcome: 'SKIP',
          seconds,
          name,
          reason: excluded ? `excluded by the suite (${sel.skip?.source ?? ''})` : reason,
          needsTwoNodes: TWO_NODES.test(reason),
        });
      } else {
        // failed, panicked, interrupted, aborted, timedout
        out.push({ outcome: 'FAIL', seconds, name, reason: `${spec.State}: ${reason}`, needsTwoNodes: false });
      }
    }
  }
  return out;
}

/** Reads and checks the JSON report e2e.test wrote. */
export function readReport(file: string): GinkgoReport[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ReportError(file, `not readable as JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(parsed) || parsed.some((r) => typeof r !== 'object' || r === null || !('SpecReports' in r))) {
    throw new ReportError(file, 'not a ginkgo JSON report (an array of suite reports with SpecReports)');
  }
  return parsed as GinkgoReport[];
}

/** One line per test: outcome, seconds, the full name, and after it why it failed or skipped. */
export function formatLine(r: TestResult): string {
  const why = r.reason === '' ? '' : `  -- ${r.needsTwoNodes ? 'needs two nodes: ' : ''}${r.reason}`;
  return `${r.outcome} ${r.seconds.toFixed(1).padStart(7)}s  ${r.name}${why}`;
}

/** The last line: `conformance: N passed, M failed, K skipped`. */
export function summaryLine(rs: TestResult[]): string {
  const n = (o: Outcome) => rs.filter((r) => r.outcome === o).length;
  return `conformance: ${n('PASS')} passed, ${n('FAIL')} failed, ${n('SKIP')} skipped`;
}
