/** `cellium policy get|import|delete|selectors|trace`. */
import type { CelliumTraceResult, Policy, PolicyTraceQuery } from '../../api/models.js';
import { collect, parsePortProtocol, parseSeconds, parseTraceSubject } from '../args.js';
import type { CommandGroup } from '../context.js';
import { UsageError } from '../errors.js';
import { keyValues, table } from '../output.js';
import { importFiles } from '../import-files.js';
import { waitForPolicyRevision } from '../wait.js';

/** The rules as data: the agent sends them as JSON text (Cilium's `policy` string); undefined when that text is not JSON. */
function parsedRules(p: Policy): unknown {
  try {
    return JSON.parse(p.policy) as unknown;
  } catch {
    return undefined;
  }
}

/** `-o json` of `policy get`: the revision and the rules as JSON values (not one escaped string). */
export function policyJson(p: Policy): { revision: number; policy: unknown } {
  return { revision: p.revision, policy: parsedRules(p) ?? p.policy };
}

/** The rules (pretty JSON when the agent's text is JSON) and the revision. */
export function renderPolicy(p: Policy): string {
  const rules = parsedRules(p);
  const text = rules === undefined ? p.policy : JSON.stringify(rules, null, 2);
  return `${text.trimEnd()}\nRevision: ${p.revision}\n`;
}

/** A trace's verdict, per direction, and its log. */
export function renderTrace(t: CelliumTraceResult): string {
  const dir = (d: CelliumTraceResult['ingress']): string =>
    `${d.verdict.toUpperCase()}${d.enforced ? '' : ' (not enforced)'}${d.rules.length ? `   by ${d.rules.join('; ')}` : ''}`;
  return keyValues([['Verdict', t.verdict.toUpperCase()], ['Egress (source)', dir(t.egress)], ['Ingress (destination)', dir(t.ingress)]]) + (t.log.length ? '\n' + t.log.join('\n') + '\n' : '');
}

/** The trace query from the CLI flags. */
export function traceQuery(src: readonly string[], dst: readonly string[], dport: string): PolicyTraceQuery {
  const s = parseTraceSubject(src, '--src');
  const d = parseTraceSubject(dst, '--dst');
  const { port, protocol } = parsePortProtocol(dport);
  return {
    ...('identity' in s ? { 'src-identity': s.identity } : { src: s.labels }),
    ...('identity' in d ? { 'dst-identity': d.identity } : { dst: d.labels }),
    dport: port,
    proto: protocol,
  };
}

/** Registers the policy commands. */
export const policyCommands: CommandGroup = (program, rt) => {
  const policy = program.command('policy').description('manage network policy');

  policy
    .command('get')
    .description('show the policy rules (optionally only those with all the given labels)')
    .argument('[labels...]')
    .action(
      rt.action(async (ctx, labels: string[]) => {
        const p = await ctx.client.getPolicy(labels);
        ctx.print(policyJson(p), () => renderPolicy(p));
      }),
    );

  policy
    .command('import')
    .description('import policy files (CiliumNetworkPolicy YAML/JSON or a rules array; - reads stdin)')
    .argument('<files...>')
    .option('--wait', 'wait until every endpoint enforces the new revision (progress on stderr)')
    .option('--wait-timeout <duration>', 'give up waiting after this long', '60s')
    .action(
      rt.action(async (ctx, files: string[], opts: { wait?: boolean; waitTimeout: string }) => {
        // several files are one import, all or nothing (import-files.ts)
        const last = await importFiles(ctx, files, (text) => ctx.client.putPolicy(text));
        const imported = files.map((file) => ({ file, revision: last.revision }));
        if (opts.wait) await waitForPolicyRevision(ctx, last.revision, { timeoutSeconds: parseSeconds(opts.waitTimeout) });
        ctx.print({ imported, revision: last.revision }, (r) => `Revision: ${r.revision}\n`);
      }),
    );

  policy
    .command('delete')
    .description('delete the rules carrying all the given labels, or every rule with --all')
    .argument('[labels...]')
    .option('--all', 'delete every rule')
    .option('--wait', 'wait until every endpoint enforces the new revision (progress on stderr)')
    .option('--wait-timeout <duration>', 'give up waiting after this long', '60s')
    .action(
      rt.action(async (ctx, labels: string[], opts: { all?: boolean; wait?: boolean; waitTimeout: string }) => {
        if (opts.all && labels.length) throw new UsageError('give either labels or --all, not both');
        if (!opts.all && !labels.length) throw new UsageError('give the labels of the rules to delete, or --all');
        const p = await ctx.client.deletePolicy(opts.all ? 'all' : labels);
        if (opts.wait) await waitForPolicyRevision(ctx, p.revision, { timeoutSeconds: parseSeconds(opts.waitTimeout) });
        ctx.print({ revision: p.revision }, (r) => `Revision: ${r.revision}\n`);
      }),
    );

  policy
    .command('selectors')
    .description('show the selector cache: which identities each selector selects')
    .action(
      rt.action(async (ctx) => {
        const sc = await ctx.client.policySelectors();
        ctx.print(sc, (rows) =>
          table(['Selector', 'Users', 'Identities'], rows.map((r) => [r.selector ?? '', r.users ?? 0, (r.identities ?? []).map(String)])),
        );
      }),
    );

  policy
    .command('trace')
    .description('show whether traffic from --src to --dst on --dport is allowed, and by which rules')
    .requiredOption('-s, --src <label|identity>', 'source labels (repeatable) or a numeric identity', collect)
    .requiredOption('-d, --dst <label|identity>', 'destination labels (repeatable) or a numeric identity', collect)
    .option('--dport <port[/protocol]>', 'destination port and protocol, e.g. 80/TCP', '0/ANY')
    .action(
      rt.action(async (ctx, opts: { src: string[]; dst: string[]; dport: string }) => {
        const t = await ctx.client.policyTrace(traceQuery(opts.src, opts.dst, opts.dport));
        ctx.print(t, renderTrace);
      }),
    );
};
