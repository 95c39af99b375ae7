/** `cellium endpoint list|get|delete|labels|config|log|health`. */
import type { Command } from 'commander';
import { renderEndpoint, renderEndpointList } from './endpoint-render.js';
import { collect, parseKeyValues, parseSeconds } from '../args.js';
import type { CliContext, CommandGroup } from '../context.js';
import { CliFailure, UsageError } from '../errors.js';
import { ApiError } from '../../api/errors.js';
import { keyValues, table } from '../output.js';
import { waitForRegeneration } from '../wait.js';

interface WaitFlags {
  wait?: boolean;
  waitTimeout: string;
}

const addWait = (c: Command): Command =>
  c.option('--wait', 'wait until the endpoint regenerated (progress on stderr)').option('--wait-timeout <duration>', 'give up waiting after this long', '60s');

async function maybeWait(ctx: CliContext, id: string, since: Date, flags: WaitFlags): Promise<void> {
  if (!flags.wait) return;
  await waitForRegeneration(ctx, id, since, { timeoutSeconds: parseSeconds(flags.waitTimeout) });
  ctx.progress(`endpoint ${id} regenerated`);
}

/** Throws CliFailure naming the first of `ids` the agent does not know (404), before anything is deleted. */
async function mustExist(ctx: CliContext, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    try {
      await ctx.client.getEndpoint(id);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) throw new CliFailure(`endpoint ${id} not found; nothing was deleted`);
      throw err;
    }
  }
}

/** Registers the endpoint commands. */
export const endpointCommands: CommandGroup = (program, rt) => {
  const ep = program.command('endpoint').alias('ep').description('manage endpoints');

  ep.command('list')
    .description('list endpoints (optionally only those with all the given labels)')
    .argument('[labels...]', 'labels such as k8s:app=web')
    .action(
      rt.action(async (ctx, labels: string[]) => {
        const eps = await ctx.client.listEndpoints(labels);
        ctx.print(eps, renderEndpointList);
      }),
    );

  ep.command('get')
    .description('show an endpoint (id: N, cilium-local:N, container-id:ID, pod-name:NS/NAME, ipv4:IP, ...)')
    .argument('<id>')
    .action(
      rt.action(async (ctx, id: string) => {
        ctx.print(await ctx.client.getEndpoint(id), renderEndpoint);
      }),
    );

  ep.command('delete')
    .description('delete endpoints by id, or every endpoint of a container')
    .argument('[ids...]')
    .option('--container-id <id>', 'delete every endpoint of this container')
    .action(
      rt.action(async (ctx, ids: string[], opts: { containerId?: string }) => {
        if (!ids.length && !opts.containerId) throw new UsageError('give endpoint ids or --container-id');
        // several: every id is looked up before the first is deleted, so a wrong one deletes none
        if (ids.length + (opts.containerId ? 1 : 0) > 1) await mustExist(ctx, ids);
        const results: { id: string; errors: number }[] = [];
        if (opts.containerId) results.push({ id: `container-id:${opts.containerId}`, ...(await ctx.client.deleteEndpointsByContainer(opts.containerId)) });
        for (const id of ids) results.push({ id, ...(await ctx.client.deleteEndpoint(id)) });
        ctx.print(results, (rs) => rs.map((r) => `Endpoint ${r.id} deleted${r.errors ? ` with ${r.errors} errors` : ''}\n`).join(''));
      }),
    );

  addWait(
    ep
      .command('labels')
      .description("show an endpoint's labels, or change its user labels with --add / --delete")
      .argument('<id>')
      .option('-a, --add <label>', 'add a user label (repeatable)', collect, [])
      .option('-d, --delete <label>', 'remove a user label (repeatable)', collect, []),
  ).action(
    rt.action(async (ctx, id: string, opts: WaitFlags & { add: string[]; delete: string[] }) => {
      if (opts.add.length || opts.delete.length) {
        const before = await ctx.client.getEndpointLabels(id);
        const current = before.status?.realized?.user ?? before.spec?.user ?? [];
        const next = [...new Set([...current, ...opts.add])].filter((l) => !opts.delete.includes(l)).sort();
        if (next.join('\n') === [...current].sort().join('\n')) {
          ctx.progress(`endpoint ${id}: user labels unchanged`);
        } else {
          const since = new Date();
          await ctx.client.setEndpointLabels(id, next);
          await maybeWait(ctx, id, since, opts);
        }
      }
      const labels = await ctx.client.getEndpointLabels(id);
      ctx.print(labels, (l) =>
        table(
          ['Kind', 'Labels'],
          [
            ['user', l.status?.realized?.user ?? l.spec?.user ?? []],
            ['security-relevant', l.status?.['security-relevant'] ?? []],
            ['derived', l.status?.derived ?? []],
            ['disabled', l.status?.disabled ?? []],
          ],
        ),
      );
    }),
  );

  addWait(
    ep
      .command('config')
      .description("show an endpoint's options, or change them with KEY=VALUE arguments")
      .argument('<id>')
      .argument('[settings...]', 'KEY=VALUE options to set'),
  ).action(
    rt.action(async (ctx, id: string, settings: string[], opts: WaitFlags) => {
      if (settings.length) {
        const options = parseKeyValues(settings);
        const since = new Date();
        await ctx.client.patchEndpointConfig(id, { options });
        await maybeWait(ctx, id, since, opts);
      }
      const cfg = await ctx.client.getEndpointConfig(id);
      ctx.print(cfg, (c) => {
        const rows = Object.entries(c.realized?.options ?? {}).map(([k, v]) => [k, v, 'mutable'] as const);
        const fixed = Object.entries(c.immutable ?? {}).map(([k, v]) => [k, v, 'immutable'] as const);
        return table(['Option', 'Value', 'Kind'], [...rows, ...fixed].sort((a, b) => a[0].localeCompare(b[0]))) + (c.error ? `Error: ${c.error}\n` : '');
      });
    }),
  );

  ep.command('log')
    .description("show an endpoint's status log")
    .argument('<id>')
    .action(
      rt.action(async (ctx, id: string) => {
        const log = await ctx.client.getEndpointLog(id);
        ctx.print(log, (l) => table(['Timestamp', 'State', 'Code', 'Message'], l.map((e) => [e.timestamp, e.state, e.code, e.message])));
      }),
    );

  ep.command('health')
    .description("show an endpoint's health")
    .argument('<id>')
    .action(
      rt.action(async (ctx, id: string) => {
        const h = await ctx.client.getEndpointHealth(id);
        ctx.print(h, (v) =>
          keyValues([
            ['Overall health', v.overallHealth],
            ['BPF', v.bpf],
            ['Policy', v.policy],
            ['Connected', v.connected === undefined ? undefined : v.connected ? 'yes' : 'no'],
          ]),
        );
      }),
    );
};
