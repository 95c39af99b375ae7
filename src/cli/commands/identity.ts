/** `cellium identity list|get`. */
import type { Identity } from '../../api/models.js';
import type { CommandGroup } from '../context.js';
import { keyValues, table } from '../output.js';

/** The identity table; `refCounts` adds the number of local endpoints using each. */
export function renderIdentities(ids: readonly Identity[], refCounts?: ReadonlyMap<number, number>): string {
  const sorted = [...ids].sort((a, b) => a.id - b.id);
  if (refCounts) return table(['ID', 'Endpoints', 'Labels'], sorted.map((i) => [i.id, refCounts.get(i.id) ?? 0, [...i.labels].sort()]));
  return table(['ID', 'Labels'], sorted.map((i) => [i.id, [...i.labels].sort()]));
}

/** Registers the identity commands. */
export const identityCommands: CommandGroup = (program, rt) => {
  const id = program.command('identity').description('show security identities');

  id.command('list')
    .description('list identities (optionally only those with all the given labels)')
    .argument('[labels...]', 'labels such as k8s:app=web')
    .option('--endpoints', 'only the identities used by local endpoints, with how many use each')
    .action(
      rt.action(async (ctx, labels: string[], opts: { endpoints?: boolean }) => {
        if (opts.endpoints) {
          const used = await ctx.client.identityEndpoints();
          ctx.print(used, (u) => renderIdentities(u.map((e) => e.identity), new Map(u.map((e) => [e.identity.id, e.refCount]))));
          return;
        }
        ctx.print(await ctx.client.listIdentities(labels), (ids) => renderIdentities(ids));
      }),
    );

  id.command('get')
    .description('show one identity')
    .argument('<id>', 'numeric identity')
    .action(
      rt.action(async (ctx, ident: string) => {
        const i = await ctx.client.getIdentity(ident);
        ctx.print(i, (v) => keyValues([['ID', v.id], ['Labels', [...v.labels].sort()], ['Labels SHA256', v.labelsSHA256]]));
      }),
    );
};
