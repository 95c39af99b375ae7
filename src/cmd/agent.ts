/**
 * `cellium-agent`: builds the hive from src/cells.ts and runs it in the foreground; stops cleanly
 * on SIGINT/SIGTERM (exit 0) and exits 1 with the error when a cell asked to shut down with one.
 *   cellium-agent [--flag=value …] [--config FILE]   run the agent
 *   cellium-agent hive [dot-graph] [--flag=value …]  print the cells, config and hook order (or DOT)
 *   cellium-agent --help                             list every flag with its default
 */
import { agentCells } from '../cells.js';
import { defaultLogger, describeHive, dotGraph, envName, errorMessage, Hive } from '../hive/index.js';

/** Text of `cellium-agent --help`, listing every flag of every cell. */
export function helpText(hive: Hive): string {
  const rows = hive.config.entries().map((e) => `  --${e.flag}=${e.field.format(e.field.default)}\n      ${e.field.help} (env ${envName(e.flag)}; ${e.owner})`);
  return [
    'Usage: cellium-agent [flags] [--config FILE]    run the node agent',
    '       cellium-agent hive [dot-graph] [flags]   print the cells, configuration and hook order',
    '',
    'Precedence: flag > environment > config file (YAML or JSON, keys are flag names) > default.',
    '',
    'Flags:',
    ...rows,
    '',
  ].join('\n');
}

/** Runs the agent command line; resolves with the process exit code. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const log = defaultLogger();
  let hive: Hive;
  let positionals: string[];
  try {
    hive = new Hive(agentCells, { name: 'agent', logger: log });
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write(helpText(hive));
      return 0;
    }
    positionals = hive.configure({ argv, env });
  } catch (err) {
    process.stderr.write(`cellium-agent: ${errorMessage(err)}\n`);
    return 2;
  }
  const [cmd, sub, ...rest] = positionals;
  try {
    if (cmd === 'hive' && rest.length === 0 && (sub === undefined || sub === 'dot-graph')) {
      // introspection prints only the hive: what the cells log while being constructed stays
      // out of it unless a log level was asked for
      if (env.CELLIUM_LOG_LEVEL === undefined) log.level = 'silent';
      process.stdout.write(sub === 'dot-graph' ? dotGraph(hive) : describeHive(hive));
      return 0;
    }
    if (cmd !== undefined) {
      process.stderr.write(`cellium-agent: unknown command "${positionals.join(' ')}"; commands are "hive" and "hive dot-graph" (see --help)\n`);
      return 2;
    }
    log.info({ pid: process.pid }, 'cellium-agent starting');
    const err = await hive.run();
    if (err) {
      log.error({ err: errorMessage(err) }, 'cellium-agent stopped with an error');
      return 1;
    }
    log.info('cellium-agent stopped');
    return 0;
  } catch (err) {
    log.error({ err: errorMessage(err) }, 'cellium-agent failed');
    process.stderr.write(`cellium-agent: ${errorMessage(err)}\n`);
    return 1;
  }
}
