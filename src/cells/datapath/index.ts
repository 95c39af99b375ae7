/**
 * The datapath cell (module `datapath`): `--datapath-mode=auto|bpf|memory` picks one provider of
 * the DatapathProvidersToken group and provides DatapathToken and LinkCheckerToken from it. The
 * memory datapath is built in; the BPF datapath plugs in by contributing its own provider:
 * `provideInto(DatapathProvidersToken, bpfProvider, …deps)` in its cell (set `preferInAuto` to
 * make `auto` choose it when available).
 */
import { config, module, provide, provideInto } from '../../hive/cell.js';
import { LoggerToken } from '../../hive/logger.js';
import { memoryDatapathProvider } from '../datapath-memory/index.js';
import { ctTimeoutsOf } from './ct-config.js';
import { DatapathConfigToken, DatapathProvidersToken, LinkCheckerToken, SelectedDatapathToken, datapathConfigSchema, selectDatapath, type DatapathConfig, type SelectedDatapath } from './select.js';
import { DatapathToken } from '../../datapath/types.js';

export * from '../../datapath/types.js';
export * from './select.js';
export * from '../../datapath/map-names.js';
export { ctTimeoutsOf, conntrackConfigSchema } from './ct-config.js';
export { DEFAULT_CT_TIMEOUTS, type CtTimeouts, type CtStatus } from '../../datapath/conntrack.js';

/** The datapath cell. */
export const datapathCell = module(
  'datapath',
  'Datapath selection (memory or BPF)',
  config(DatapathConfigToken, datapathConfigSchema),
  provideInto(DatapathProvidersToken, (cfg: DatapathConfig) => memoryDatapathProvider(ctTimeoutsOf(cfg)), DatapathConfigToken),
  provide(SelectedDatapathToken, selectDatapath, DatapathConfigToken, DatapathProvidersToken, LoggerToken),
  provide(DatapathToken, (s: SelectedDatapath) => s.datapath, SelectedDatapathToken),
  provide(LinkCheckerToken, (s: SelectedDatapath) => s.provider.linkExists, SelectedDatapathToken),
);
