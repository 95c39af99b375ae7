/**
 * `cellium monitor`: the datapath's events live, as `cilium-dbg monitor` prints them (or one JSON
 * object a line with `-o json`, Hubble's Flow field names), from the agent's monitor stream.
 */
import type { MonitorStreamRecord } from '../../api/client.js';
import { parseEventTypes } from '../../monitor/filter.js';
import type { CommandGroup, CliContext } from '../context.js';
import { UsageError } from '../errors.js';

/** `--related-to` values: endpoint IDs 1..65535. */
export function parseEndpointIds(values: readonly string[]): number[] {
  return values.map((v) => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < 1 || n > 65535) throw new UsageError(`--related-to "${v}" is not an endpoint ID: give a number from 1 to 65535 (see cellium endpoint list)`);
    return n;
  });
}

/** How one record is printed; undefined: nothing on stdout. */
export function renderRecord(rec: MonitorStreamRecord, json: boolean): string | undefined {
  switch (rec.kind) {
    case 'event':
      return json ? JSON.stringify(rec.flow) : String(rec.flow?.Summary ?? '');
    case 'lost':
      return json ? JSON.stringify({ lost_events: { count: rec.count, why: rec.why } }) : `Lost ${rec.count} events (${rec.why})`;
    case 'info':
      return json ? undefined : rec.message;
  }
}

async function monitor(ctx: CliContext, opts: { type: string[]; relatedTo: string[]; maxEvents?: string }): Promise<void> {
  let types: string[];
  try {
    types = parseEventTypes(opts.type);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const relatedTo = parseEndpointIds(opts.relatedTo);
  const max = opts.maxEvents === undefined ? undefined : Number(opts.maxEvents);
  if (max !== undefined && (!Number.isInteger(max) || max < 1)) throw new UsageError(`--max-events "${opts.maxEvents}" must be a whole number of at least 1`);
  const done = new AbortController();
  let seen = 0;
  try {
    await ctx.client.monitor({ type: types, 'related-to': relatedTo }, (rec) => {
      if (done.signal.aborted) return;
      if (rec.kind === 'info' && ctx.json) ctx.progress(rec.message ?? '');
      const line = renderRecord(rec, ctx.json);
      if (line !== undefined) ctx.io.stdout(`${line}\n`);
      if (rec.kind === 'event' && max !== undefined && ++seen >= max) done.abort();
    }, done.signal);
  } catch (err) {
    if (!done.signal.aborted) throw err;
  }
}

const collect = (v: string, prev: string[]): string[] => [...prev, ...v.split(',').filter(Boolean)];

/** Registers `cellium monitor`. */
export const monitorCommands: CommandGroup = (program, rt) => {
  program
    .command('monitor')
    .description('stream the datapath events live (drops, traces, policy verdicts) like cilium-dbg monitor; Ctrl-C stops')
    .option('-t, --type <type>', 'only these event types: drop, trace, policy-verdict (repeatable or comma-separated)', collect, [])
    .option('--related-to <id>', 'only events of these endpoint IDs (repeatable or comma-separated)', collect, [])
    .option('--max-events <n>', 'stop after this many events')
    .action(rt.action(monitor));
};
