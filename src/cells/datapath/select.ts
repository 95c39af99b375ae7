/**
 * Datapath selection: `--datapath-mode=auto|bpf|memory`. Each datapath implementation contributes
 * a DatapathProvider to the DatapathProvidersToken value group (the memory one is built in; the
 * BPF cell adds its own with `provideInto(DatapathProvidersToken, …)`), and the selection picks one.
 * `auto` takes the first available provider that asks to be preferred in auto mode, else memory.
 * The selection also provides the LinkChecker: whether an endpoint's host interface exists.
 */
import { existsSync } from 'node:fs';
import { oneOf, type ValuesOf } from '../../hive/config/fields.js';
import type { DepsValues } from '../../hive/cell.js';
import { LoggerToken } from '../../hive/logger.js';
import { groupToken, token } from '../../hive/token.js';
import { conntrackConfigSchema } from './ct-config.js';
import type { Datapath, LinkChecker } from '../../datapath/types.js';

/** Datapath modes. */
export const DATAPATH_MODES = ['auto', 'bpf', 'memory'] as const;

/** A datapath mode. */
export type DatapathMode = (typeof DATAPATH_MODES)[number];

/** Schema of the datapath configuration. */
export const datapathConfigSchema = {
  datapathMode: oneOf(DATAPATH_MODES, 'auto', 'Datapath: bpf (programs and maps in the kernel), memory (in-process, unprivileged) or auto'),
  ...conntrackConfigSchema,
};

/** The resolved datapath configuration. */
export type DatapathConfig = ValuesOf<typeof datapathConfigSchema>;

/** Token for the datapath configuration. */
export const DatapathConfigToken = token<DatapathConfig>('DatapathConfig');

/** The real check: `/sys/class/net/<ifname>` exists. */
export const sysfsLinkChecker: LinkChecker = async (ifName) => /^[^/\0]{1,15}$/.test(ifName) && ifName !== '.' && ifName !== '..' && existsSync(`/sys/class/net/${ifName}`);

/** One datapath implementation, offered to the selection. */
export interface DatapathProvider {
  readonly mode: 'memory' | 'bpf';
  /** Prefer this provider in auto mode when it is available. */
  readonly preferInAuto: boolean;
  /** Why this datapath cannot run here (e.g. `needs root`), or undefined when it can. */
  unavailable(): string | undefined;
  /** Builds the datapath; called once, for the selected provider only. */
  create(): Datapath;
  /** Whether a host interface exists, as this datapath sees interfaces. */
  readonly linkExists: LinkChecker;
}

/** The value group every datapath implementation contributes its provider to. */
export const DatapathProvidersToken = groupToken<DatapathProvider>('DatapathProviders');

/** The selected provider and its datapath. */
export interface SelectedDatapath {
  readonly requested: DatapathMode;
  readonly provider: DatapathProvider;
  readonly datapath: Datapath;
}

/** Token for the selection (DatapathToken and LinkCheckerToken are derived from it). */
export const SelectedDatapathToken = token<SelectedDatapath>('SelectedDatapath');

/** Picks the provider for a mode; throws an Error saying why a requested mode cannot run. */
export function pickProvider(mode: DatapathMode, providers: readonly DatapathProvider[]): DatapathProvider {
  if (mode === 'auto') {
    const preferred = providers.find((p) => p.preferInAuto && p.unavailable() === undefined);
    const fallback = providers.find((p) => p.mode === 'memory' && p.unavailable() === undefined);
    const chosen = preferred ?? fallback;
    if (!chosen) throw new Error('--datapath-mode=auto: no datapath is available (the memory datapath is not registered)');
    return chosen;
  }
  const p = providers.find((x) => x.mode === mode);
  if (!p) throw new Error(`--datapath-mode=${mode}: no ${mode} datapath is built into this agent (registered: ${providers.map((x) => x.mode).join(', ') || 'none'})`);
  const why = p.unavailable();
  if (why !== undefined) throw new Error(`--datapath-mode=${mode}: the ${mode} datapath cannot run here: ${why}`);
  return p;
}

/** What the selection is built from. */
export const selectionDeps = { cfg: DatapathConfigToken, providers: DatapathProvidersToken, log: LoggerToken } as const;

/** Selects and builds the datapath; in auto mode, says in one warning line why a preferred datapath was passed over. */
export function selectDatapath({ cfg, providers, log }: DepsValues<typeof selectionDeps>): SelectedDatapath {
  const provider = pickProvider(cfg.datapathMode, providers);
  if (cfg.datapathMode === 'auto') {
    for (const p of providers) {
      if (!p.preferInAuto || p === provider) continue;
      const reason = p.unavailable() ?? 'not chosen';
      log.warn({ skipped: p.mode, mode: provider.mode, reason }, `--datapath-mode=auto: the ${p.mode} datapath cannot run here (${reason}); using the ${provider.mode} datapath`);
    }
  }
  const datapath = provider.create();
  log.info({ requested: cfg.datapathMode, mode: datapath.mode }, 'datapath selected');
  return { requested: cfg.datapathMode, provider, datapath };
}
