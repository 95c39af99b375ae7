/** `cellium map list|get NAME`. */
import { basename } from 'node:path';
import type { CommandGroup } from '../context.js';
import { table } from '../output.js';

/** Registers the map commands. */
export const mapCommands: CommandGroup = (program, rt) => {
  const map = program.command('map').description('show the BPF maps of the datapath');

  map
    .command('list')
    .description('list the open BPF maps')
    .action(
      rt.action(async (ctx) => {
        const list = await ctx.client.listMaps();
        ctx.print(list, (l) =>
          table(
            ['Name', 'Entries', 'Path'],
            (l.maps ?? []).map((m) => [basename(m.path ?? ''), (m.cache ?? []).length, m.path ?? '']),
          ),
        );
      }),
    );

  map
    .command('get')
    .description("show a BPF map's entries")
    .argument('<name>', 'map name, as in `cellium map list`')
    .action(
      rt.action(async (ctx, name: string) => {
        const m = await ctx.client.getMap(name);
        ctx.print(m, (v) => {
          const rows = (v.cache ?? []).map((e) => [e.key ?? '', e.value ?? '', e['desired-action'] ?? '', e['last-error'] ?? '']);
          return table(['Key', 'Value', 'State', 'Error'], rows) + (rows.length ? '' : `(${v.path ?? name} is empty)\n`);
        });
      }),
    );
};
