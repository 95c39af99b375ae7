/**
 * The datapath cell (module `datapath`): `--datapath-mode=auto|bpf|memory` picks one provider of
 * the DatapathProvidersToken group and provides DatapathToken and LinkCheckerToken from it. Each
 * datapath plugs in by contributing its provider from its own cell (`memoryDatapathCell`,
 * `bpfDatapathCell`): `provideInto(DatapathProvidersToken, provider, deps)`, its dependencies named
 * in one object (set `preferInAuto` to make `auto` choose it when available).
 */
import { config, module, provide } from '../../hive/cell.js';
import { DatapathConfigToken, SelectedDatapathToken, datapathConfigSchema, selectDatapath, selectionDeps, type SelectedDatapath } from './select.js';
import { DatapathToken, LinkCheckerToken } from '../../datapath/types.js';

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
  provide(SelectedDatapathToken, selectDatapath, selectionDeps),
  provide(DatapathToken, (s: SelectedDatapath) => s.datapath, SelectedDatapathToken),
  provide(LinkCheckerToken, (s: SelectedDatapath) => s.provider.linkExists, SelectedDatapathToken),
);
