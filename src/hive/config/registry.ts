/**
 * The hive's config registry: every flag declared by every config cell, and their resolved
 * values from defaults < config file < environment < command-line flags.
 */
import { readFileSync } from 'node:fs';
import { closest } from 'fastest-levenshtein';
import { parse as parseYaml } from 'yaml';
import { ConfigError, errorMessage } from '../errors.js';
import { envName, type Field } from './fields.js';

/** Where a resolved value came from. */
export type ConfigSource = 'default' | 'file' | 'env' | 'flag';

/** One declared flag. */
export interface FlagEntry {
  readonly flag: string;
  readonly field: Field<unknown>;
  /** Who declared it (config token name and module path), for errors and introspection. */
  readonly owner: string;
  value: unknown;
  source: ConfigSource;
}

/** Raw inputs to resolve configuration from. */
export interface ConfigInputs {
  /** Command-line arguments (flags only; positionals are returned unparsed). */
  readonly argv?: readonly string[];
  /** Environment; only `CELLIUM_*` variables that match a flag are read. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** A YAML or JSON file whose keys are flag names. `--config FILE` in argv also sets it. */
  readonly file?: string;
  /** Values set directly (tests, embedding); same precedence as flags. */
  readonly values?: Readonly<Record<string, unknown>>;
}

/** Holds the declared flags and resolves them. */
export class ConfigRegistry {
  private readonly flags = new Map<string, FlagEntry>();

  /** Declares a flag; a second declaration of the same flag is an error naming both owners. */
  declare(flag: string, field: Field<unknown>, owner: string): void {
    const prev = this.flags.get(flag);
    if (prev) {
      throw new ConfigError(flag, `flag --${flag} is declared twice: by ${prev.owner} and by ${owner}; rename one of the keys`);
    }
    if (flag === 'config') throw new ConfigError(flag, `flag --config is reserved for the config file (declared by ${owner})`);
    this.flags.set(flag, { flag, field, owner, value: field.default, source: 'default' });
  }

  /** All declared flags, in declaration order. */
  entries(): readonly FlagEntry[] {
    return [...this.flags.values()];
  }

  /** The resolved value of a flag. */
  value(flag: string): unknown {
    const e = this.flags.get(flag);
    if (!e) throw new ConfigError(flag, `unknown config key "${flag}"${this.suggest(flag)}`);
    return e.value;
  }

  /**
   * Resolves every flag from the inputs; returns the positional arguments left in argv.
   * Throws ConfigError naming the key, the source and the closest valid key.
   */
  resolve(inputs: ConfigInputs): string[] {
    const { flagValues, positionals, file } = this.parseArgv(inputs.argv ?? []);
    const filePath = file ?? inputs.file;
    for (const e of this.flags.values()) {
      e.value = e.field.default;
      e.source = 'default';
    }
    if (filePath) this.applyFile(filePath);
    this.applyEnv(inputs.env ?? {});
    for (const [flag, raw] of Object.entries(inputs.values ?? {})) this.set(flag, raw, 'flag', 'value');
    for (const [flag, raw] of flagValues) this.set(flag, raw, 'flag', 'flag');
    return positionals;
  }

  private set(flag: string, raw: unknown, source: ConfigSource, where: string): void {
    const e = this.flags.get(flag);
    if (!e) throw new ConfigError(flag, `unknown ${where} "${flag}"${this.suggest(flag)}`);
    try {
      e.value = e.field.parse(raw);
    } catch (err) {
      throw new ConfigError(flag, `invalid value for ${where} "${flag}": ${errorMessage(err)}`);
    }
    e.source = source;
  }

  private applyFile(path: string): void {
    let doc: unknown;
    try {
      doc = parseYaml(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new ConfigError('config', `cannot read config file ${path}: ${errorMessage(err)}`);
    }
    if (doc === null || doc === undefined) return;
    if (typeof doc !== 'object' || Array.isArray(doc)) {
      throw new ConfigError('config', `config file ${path} must hold a mapping of flag names to values (e.g. "endpoint-gc-interval: 5m")`);
    }
    for (const [key, raw] of Object.entries(doc)) this.set(key, raw, 'file', `key in config file ${path}:`);
  }

  private applyEnv(env: Readonly<Record<string, string | undefined>>): void {
    for (const e of this.flags.values()) {
      const raw = env[envName(e.flag)];
      if (raw !== undefined) this.set(e.flag, raw, 'env', `environment variable ${envName(e.flag)} for`);
    }
  }

  private parseArgv(argv: readonly string[]): { flagValues: [string, unknown][]; positionals: string[]; file?: string } {
    const flagValues: [string, unknown][] = [];
    const positionals: string[] = [];
    let file: string | undefined;
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i]!;
      if (arg === '--') {
        positionals.push(...argv.slice(i + 1));
        break;
      }
      if (!arg.startsWith('--')) {
        positionals.push(arg);
        continue;
      }
      const eq = arg.indexOf('=');
      let name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
      let value: unknown = eq >= 0 ? arg.slice(eq + 1) : undefined;
      if (name === 'config') {
        file = (value as string | undefined) ?? argv[++i];
        if (!file) throw new ConfigError('config', 'flag --config needs a file path (--config /etc/cellium/config.yaml)');
        continue;
      }
      let entry = this.flags.get(name);
      if (!entry && name.startsWith('no-') && value === undefined && this.flags.get(name.slice(3))?.field.kind === 'bool') {
        name = name.slice(3);
        entry = this.flags.get(name);
        value = false;
      }
      if (!entry) throw new ConfigError(name, `unknown flag --${name}${this.suggest(name, '--')}`);
      if (value === undefined) {
        const next = argv[i + 1];
        if (entry.field.kind === 'bool') value = next === 'true' || next === 'false' ? argv[++i] : true;
        else if (next === undefined || next.startsWith('--')) throw new ConfigError(name, `flag --${name} needs a value (${entry.field.help})`);
        else value = argv[++i];
      }
      flagValues.push([name, value]);
    }
    return { flagValues, positionals, file };
  }

  /** ", did you mean "x"?" for the closest declared flag, or "" when none is declared. */
  private suggest(name: string, prefix = ''): string {
    const all = [...this.flags.keys()];
    if (all.length === 0) return ' (no configuration keys are declared)';
    return `; did you mean "${prefix}${closest(name, all)}"?`;
  }
}
