/**
 * Prints what `npm run conformance` shows (scripts/conformance.sh runs it): one line per test, the
 * run's wall time with the agent's CPU and RSS during it, and `conformance: N passed, M failed,
 * K skipped` last. Exit 1 when a test failed.
 *
 *   report-cli.ts --report report.json --focus RE [--skip RE] [--wall SECS] [--samples FILE]
 *
 * FILE holds `time cpu-seconds rss-KiB` lines, one a second, sampled from the agent's /proc entry.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatLine, readReport, results, summaryLine } from './report.js';

/** The agent's use over the run, from the sampler's lines. */
export function agentUse(samples: string): { cpuSeconds: number; seconds: number; rssStartMiB: number; rssPeakMiB: number; rssEndMiB: number } | undefined {
  const rows = samples
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter((r) => r.length === 3 && r.every((x) => Number.isFinite(x)));
  const first = rows[0];
  const last = rows[rows.length - 1];
  if (first === undefined || last === undefined || rows.length < 2) return undefined;
  const mib = (kib: number) => kib / 1024;
  return {
    cpuSeconds: last[1]! - first[1]!,
    seconds: last[0]! - first[0]!,
    rssStartMiB: mib(first[2]!),
    rssPeakMiB: mib(Math.max(...rows.map((r) => r[2]!))),
    rssEndMiB: mib(last[2]!),
  };
}

function main(): number {
  const { values } = parseArgs({
    options: {
      report: { type: 'string' },
      focus: { type: 'string' },
      skip: { type: 'string' },
      wall: { type: 'string' },
      samples: { type: 'string' },
    },
  });
  if (values.report === undefined || values.focus === undefined) {
    console.error('conformance: report-cli needs --report FILE and --focus RE (scripts/conformance.sh passes them)');
    return 2;
  }
  const rs = results(readReport(values.report), {
    focus: new RegExp(values.focus),
    skip: values.skip === undefined || values.skip === '' ? undefined : new RegExp(values.skip),
  });
  for (const r of rs) console.log(formatLine(r));
  const twoNodes = rs.filter((r) => r.needsTwoNodes).length;
  if (twoNodes > 0) console.log(`conformance: ${twoNodes} skipped because they need two nodes (this cluster has one)`);
  const use = values.samples === undefined ? undefined : agentUse(readFileSync(values.samples, 'utf8'));
  const wall = values.wall === undefined ? '' : `wall ${values.wall} s`;
  if (use !== undefined) {
    const pct = use.seconds > 0 ? (100 * use.cpuSeconds) / use.seconds : 0;
    console.log(
      `conformance: ${wall}; agent CPU ${use.cpuSeconds.toFixed(1)} s (${pct.toFixed(1)}% of one core), ` +
        `RSS ${use.rssStartMiB.toFixed(0)} MiB at start, ${use.rssPeakMiB.toFixed(0)} MiB peak, ${use.rssEndMiB.toFixed(0)} MiB at end`,
    );
  } else if (wall !== '') {
    console.log(`conformance: ${wall}; the agent's process was not found, so no CPU or RSS figures`);
  }
  console.log(summaryLine(rs));
  return rs.some((r) => r.outcome === 'FAIL') ? 1 : 0;
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) process.exitCode = main();
