/** `--wait`: polls the agent until it is ready or endpoints regenerated, reporting progress on stderr. */
import { AgentUnreachableError, ApiError } from '../api/errors.js';
import type { Endpoint, StatusResponse } from '../api/models.js';
import type { CliContext } from './context.js';
import { CliFailure } from './errors.js';

/** How long and how often to poll. */
export interface WaitOptions {
  readonly timeoutSeconds: number;
  readonly intervalMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until endpoint `id` finished a regeneration that started at or after `since`: a `ready`
 * entry in its log newer than `since` (a `failed` one fails the wait). Prints the state as it moves.
 */
export async function waitForRegeneration(ctx: CliContext, id: string, since: Date, opts: WaitOptions): Promise<Endpoint> {
  const deadline = Date.now() + opts.timeoutSeconds * 1000;
  let last = '';
  for (;;) {
    const ep = await ctx.client.getEndpoint(id);
    const state = ep.status.state;
    const recent = (ep.status.log ?? []).filter((e) => Date.parse(e.timestamp) >= since.getTime() - 1);
    const failed = recent.find((e) => e.code === 'failed');
    if (failed) throw new CliFailure(`endpoint ${id} failed to regenerate: ${failed.message}`);
    if (state === 'ready' && (recent.some((e) => e.state === 'ready') || ep.status.log === undefined)) return ep;
    if (state !== last) ctx.progress(`waiting for endpoint ${id} to regenerate: ${state}`);
    last = state;
    if (Date.now() > deadline) throw new CliFailure(`endpoint ${id} did not regenerate within ${opts.timeoutSeconds}s (state ${state})`);
    await sleep(opts.intervalMs ?? 200);
  }
}

/**
 * How many endpoints realized `revision`: GET /cellium/policy/realized (a few numbers the agent
 * keeps); an agent without it (404, an older release) is asked with GET /endpoint as Cilium's CLI does.
 */
async function realizedCount(ctx: CliContext, revision: number): Promise<{ done: number; total: number }> {
  try {
    const r = await ctx.client.policyRealized(revision);
    return { done: r.realized, total: r.endpoints };
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
  }
  const eps = await ctx.client.listEndpoints();
  return { done: eps.filter((e) => (e.status.policy?.realized?.['policy-revision'] ?? 0) >= revision).length, total: eps.length };
}

/** Waits until every endpoint realized policy revision `revision` or newer, showing how many have. */
export async function waitForPolicyRevision(ctx: CliContext, revision: number, opts: WaitOptions): Promise<void> {
  const deadline = Date.now() + opts.timeoutSeconds * 1000;
  let last = '';
  for (;;) {
    const { done, total } = await realizedCount(ctx, revision);
    const line = `waiting for policy revision ${revision}: ${done}/${total} endpoints`;
    if (line !== last) ctx.progress(line);
    last = line;
    if (done === total) return;
    if (Date.now() > deadline) throw new CliFailure(`only ${done} of ${total} endpoints reached policy revision ${revision} within ${opts.timeoutSeconds}s`);
    await sleep(opts.intervalMs ?? 200);
  }
}

/**
 * Waits until the agent answers GET /healthz with state Ok, tolerating an agent that is not
 * listening yet (it may be starting). Prints each new condition on stderr.
 */
export async function waitForAgent(ctx: CliContext, opts: WaitOptions): Promise<StatusResponse> {
  const deadline = Date.now() + opts.timeoutSeconds * 1000;
  let last = '';
  for (;;) {
    let line: string;
    try {
      const s = await ctx.client.status();
      if (s.cilium?.state === 'Ok') return s;
      line = `waiting for the agent: state ${s.cilium?.state ?? 'unknown'}${s.cilium?.msg ? ` (${s.cilium.msg})` : ''}`;
    } catch (err) {
      if (!(err instanceof AgentUnreachableError)) throw err;
      line = `waiting for the agent at ${err.target}: ${err.code}`;
    }
    if (line !== last) ctx.progress(line);
    last = line;
    if (Date.now() > deadline) throw new CliFailure(`the agent was not ready within ${opts.timeoutSeconds}s (${line.replace(/^waiting for the agent:? ?/, '')})`);
    await sleep(opts.intervalMs ?? 200);
  }
}
