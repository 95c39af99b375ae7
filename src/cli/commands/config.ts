/** `cellium config [KEY=VALUE...]`: show or change the agent's mutable options. */
import type { DaemonConfiguration, DaemonConfigurationSpec } from '../../api/models.js';
import { parseKeyValues } from '../args.js';
import type { CommandGroup } from '../context.js';
import { UsageError } from '../errors.js';
import { table } from '../output.js';

const ENFORCEMENT_KEYS = new Set(['policy-enforcement', 'PolicyEnforcement']);
const ENFORCEMENT_MODES = ['default', 'always', 'never'] as const;

/** Splits KEY=VALUE settings into a DaemonConfigurationSpec (policy-enforcement is its own field, as in Cilium). */
export function configSpec(settings: readonly string[]): DaemonConfigurationSpec {
  const options = parseKeyValues(settings);
  const spec: { options?: Record<string, string>; 'policy-enforcement'?: (typeof ENFORCEMENT_MODES)[number] } = {};
  for (const [k, v] of Object.entries(options)) {
    if (ENFORCEMENT_KEYS.has(k)) {
      const mode = v.toLowerCase() as (typeof ENFORCEMENT_MODES)[number];
      if (!ENFORCEMENT_MODES.includes(mode)) throw new UsageError(`invalid ${k} "${v}": expected one of ${ENFORCEMENT_MODES.join(', ')}`);
      spec['policy-enforcement'] = mode;
    } else {
      (spec.options ??= {})[k] = v;
    }
  }
  return spec;
}

/** The options table: mutable ones, and with `all` every configuration value in effect. */
export function renderConfig(c: DaemonConfiguration, all: boolean): string {
  const rows: [string, string][] = Object.entries(c.status?.realized?.options ?? c.spec?.options ?? {});
  const enforcement = c.status?.realized?.['policy-enforcement'] ?? c.spec?.['policy-enforcement'];
  if (enforcement) rows.push(['PolicyEnforcement', enforcement]);
  rows.sort((a, b) => a[0].localeCompare(b[0]));
  let out = table(['Option', 'Value'], rows);
  if (all) {
    const map = c.status?.daemonConfigurationMap ?? {};
    const fixed = Object.entries({ ...map, ...(c.status?.immutable ?? {}) }).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
    out += '\n' + table(['Setting', 'Value'], fixed.sort((a, b) => a[0]!.localeCompare(b[0]!)));
  }
  return out;
}

/** Registers `cellium config`. */
export const configCommands: CommandGroup = (program, rt) => {
  program
    .command('config')
    .description("show the agent's mutable options, or change them: cellium config KEY=VALUE ...")
    .argument('[settings...]', 'KEY=VALUE options to set (PolicyEnforcement=default|always|never)')
    .option('-a, --all', 'also show every configuration value in effect')
    .action(
      rt.action(async (ctx, settings: string[], opts: { all?: boolean }) => {
        if (settings.length) {
          const spec = configSpec(settings);
          await ctx.client.patchConfig(spec);
          if (!ctx.json) ctx.io.stdout(`Configuration updated: ${settings.join(' ')}\n`);
        }
        if (settings.length && !ctx.json) return;
        ctx.print(await ctx.client.getConfig(), (c) => renderConfig(c, opts.all === true));
      }),
    );
};
