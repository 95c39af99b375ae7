/**
 * `cellium explain`: which decision dropped a flow, and the smallest policy that would allow it
 * (checked by the agent with a policy trace). The flow comes from a file or stdin (`hubble observe
 * -o json` output), or from the agent's Hubble ring (`--from`/`--to`, `--to-service`, `--flow-id`).
 * `--apply` imports the proposal after showing it as a diff, asking first unless `--yes`.
 */
import { createInterface } from 'node:readline/promises';
import type { CelliumExplanation } from '../../api/models.js';
import { parseSeconds } from '../args.js';
import type { CliContext, CommandGroup } from '../context.js';
import { CliFailure, UsageError } from '../errors.js';
import { waitForPolicyRevision } from '../wait.js';
import type { FlowQuery } from './explain-hubble.js';
import { renderDiff, renderExplanation } from './explain-render.js';

/** The options of `cellium explain`. */
export interface ExplainOptions extends FlowQuery {
  readonly hubbleServer?: string;
  readonly format: string;
  readonly apply?: boolean;
  readonly yes?: boolean;
  readonly waitTimeout: string;
}

const dropped = (o: Record<string, unknown>): boolean => o.verdict === 'DROPPED' || o.verdict === 2;

/**
 * The dropped flow in `text` (`hubble observe -o json` output: one JSON object a line, or one JSON
 * document): the last dropped one when there are several. `name` names the input in errors.
 */
export function flowFromText(text: string, name: string): { flow: Record<string, unknown>; dropped: number } {
  let docs: unknown[];
  try {
    const whole = JSON.parse(text) as unknown;
    docs = Array.isArray(whole) ? whole : [whole];
  } catch {
    docs = [];
    for (const [i, line] of text.split('\n').entries()) {
      if (line.trim() === '') continue;
      try {
        docs.push(JSON.parse(line));
      } catch (err) {
        throw new UsageError(`${name} line ${i + 1} is not JSON (${(err as Error).message}): give hubble observe -o json output, one flow a line`);
      }
    }
  }
  const flows = docs.filter((d): d is Record<string, unknown> => d !== null && typeof d === 'object')
    .map((d) => (d.flow !== null && typeof d.flow === 'object' ? (d.flow as Record<string, unknown>) : d))
    .filter((d) => d.verdict !== undefined);
  if (flows.length === 0) throw new UsageError(`${name} holds no flow: give hubble observe -o json output (objects with "flow" or "verdict")`);
  const drops = flows.filter(dropped);
  if (drops.length === 0 && flows.length > 1) throw new UsageError(`${name} holds ${flows.length} flows and none is DROPPED: give a dropped one (hubble observe --verdict DROPPED -o json)`);
  // a single flow that is not a drop goes to the agent, which names its verdict
  return { flow: drops[drops.length - 1] ?? flows[0]!, dropped: drops.length };
}

/** Where the flow comes from: exactly one of a file, --flow-id, or --from/--to/--to-service. */
function source(file: string | undefined, o: ExplainOptions): 'file' | 'hubble' {
  const query = o.from !== undefined || o.to !== undefined || o.toService !== undefined;
  const given = [file !== undefined, o.flowId !== undefined, query].filter(Boolean).length;
  if (given !== 1) throw new UsageError('give the dropped flow one way: a file of hubble observe -o json output (- for stdin), --flow-id UUID, or --from/--to (pods or addresses; --to-service NAMESPACE/NAME)');
  if (o.toService !== undefined && o.to !== undefined) throw new UsageError('give --to or --to-service, not both');
  return file !== undefined ? 'file' : 'hubble';
}

async function getFlow(ctx: CliContext, file: string | undefined, o: ExplainOptions): Promise<unknown> {
  if (source(file, o) === 'file') {
    const { flow, dropped: n } = flowFromText(await ctx.io.readFile(file!), file === '-' ? 'stdin' : file!);
    if (n > 1) ctx.progress(`${n} dropped flows given; explaining the last${typeof flow.uuid === 'string' ? ` (${flow.uuid})` : ''}`);
    return flow;
  }
  const timeoutMs = parseSeconds(ctx.options.timeout ?? '60s') * 1000;
  // gRPC and the Hubble wire load here only: no other CLI call pays for them
  const { hubbleAddress, lastDroppedFlow } = await import('./explain-hubble.js');
  return lastDroppedFlow(hubbleAddress(o.hubbleServer, ctx.options.socketPath), o, timeoutMs);
}

async function confirm(ctx: CliContext, question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** Imports the proposal after showing the diff; returns the new revision. */
async function apply(ctx: CliContext, e: CelliumExplanation, o: ExplainOptions): Promise<number> {
  if (!e.proposal) throw new CliFailure(`nothing to apply: ${e.noProposal ?? 'no policy was proposed'}`);
  const before = await ctx.client.getPolicy();
  let rules = 0;
  try {
    rules = (JSON.parse(before.policy) as unknown[]).length;
  } catch {
    // the count is for the diff header only
  }
  ctx.progress(renderDiff(e.proposal.text, before.revision, rules).trimEnd());
  if (!o.yes && !(await confirm(ctx, 'Import this policy? [y/N] '))) throw new CliFailure('not imported');
  const after = await ctx.client.putPolicy(e.proposal.text);
  await waitForPolicyRevision(ctx, after.revision, { timeoutSeconds: parseSeconds(o.waitTimeout) });
  ctx.progress(`Imported: policy revision ${after.revision}, enforced by every endpoint`);
  return after.revision;
}

async function explain(ctx: CliContext, file: string | undefined, o: ExplainOptions): Promise<void> {
  if (o.format !== 'cilium' && o.format !== 'k8s') throw new UsageError(`--format "${o.format}" is not a format: give cilium (CiliumNetworkPolicy) or k8s (NetworkPolicy)`);
  if (o.apply && o.format === 'k8s') throw new UsageError('--apply imports a CiliumNetworkPolicy into the agent; a NetworkPolicy is applied through Kubernetes (kubectl apply -f FILE): drop --format k8s, or --apply');
  if (o.yes && !o.apply) throw new UsageError('--yes answers the question of --apply: give --apply too');
  if (o.apply && !o.yes && (file === '-' || !process.stdin.isTTY)) {
    throw new UsageError('--apply asks before importing, and stdin is not a terminal (or holds the flow): add --yes to import without asking');
  }
  const flow = await getFlow(ctx, file, o);
  const e = await ctx.client.explainFlow({ flow: flow as Record<string, unknown>, format: o.format });
  if (!o.apply) {
    ctx.print(e, renderExplanation);
    return;
  }
  if (!ctx.json) ctx.io.stdout(renderExplanation(e));
  const revision = await apply(ctx, e, o);
  if (ctx.json) ctx.print({ explanation: e, applied: { revision } }, () => '');
}

/** Registers `cellium explain`. */
export const explainCommands: CommandGroup = (program, rt) => {
  program
    .command('explain')
    .description('explain a dropped flow: the decision that dropped it and the smallest policy that would allow it (checked by a policy trace)')
    .argument('[file]', 'hubble observe -o json output holding the flow (- for stdin); the last dropped flow is explained')
    .option('--from <pod|ip>', 'the last drop from this pod (NAMESPACE/NAME) or address, in the agent\'s Hubble ring')
    .option('--to <pod|ip>', 'the last drop to this pod (NAMESPACE/NAME) or address')
    .option('--to-service <namespace/name>', 'the last drop to this service (e.g. no backend)')
    .option('--flow-id <uuid>', 'the flow with this uuid (hubble observe -o json: "uuid")')
    .option('--hubble-server <unix://path>', 'the agent\'s Hubble socket (its --hubble-socket-path); default hubble.sock beside --socket-path')
    .option('--format <format>', 'the proposal: cilium (CiliumNetworkPolicy) or k8s (NetworkPolicy)', 'cilium')
    .option('--apply', 'import the proposed policy after showing it as a diff (asks first)')
    .option('--yes', 'with --apply: do not ask')
    .option('--wait-timeout <duration>', 'with --apply: how long to wait for every endpoint to enforce it', '60s')
    .action(rt.action(explain));
};
