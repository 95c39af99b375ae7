/**
 * The LB maps of the selected datapath: its own when it has them (the memory datapath's, which its
 * verdicts read), else in memory (a datapath without LB); for the BPF datapath,
 * the maps pinned under --bpf-root, opened on first use (the reconciler's start, after the
 * datapath's own start has mounted the BPF file system).
 */
import type { Logger } from '../../hive/logger.js';
import { memoryLBMaps } from '../../datapath/memory/lb-maps.js';
import type { LBMapSet } from '../../datapath/lb-maps.js';
import { BPF_MAGLEV_TABLE_SIZE, openLBMaps } from '../../maps/lb/index.js';
import { maglevSizeUnsupported } from './errors.js';
import type { Datapath } from '../../datapath/types.js';
import type { BpfDatapathConfig } from '../../datapath/bpf-config.js';
import type { LBConfig } from './config.js';

/** An LBMapSet whose maps are made by `open` when first touched; `replaced` is what opening replaced. */
export function lazyLBMaps(open: () => LBMapSet, replaced: readonly string[] = []): LBMapSet {
  let maps: LBMapSet | undefined;
  const get = (): LBMapSet => (maps ??= open());
  return {
    get replaced() { get(); return replaced; },
    get services4() { return get().services4; },
    get services6() { return get().services6; },
    get backends4() { return get().backends4; },
    get backends6() { return get().backends6; },
    get revNat4() { return get().revNat4; },
    get revNat6() { return get().revNat6; },
    get maglev4() { return get().maglev4; },
    get maglev6() { return get().maglev6; },
    get affinityMatch() { return get().affinityMatch; },
  };
}

/** The selected datapath's LB maps. */
export function selectLBMaps(dp: Datapath, bpf: BpfDatapathConfig, cfg: LBConfig, log: Logger): LBMapSet {
  if (dp.lbMaps) return dp.lbMaps;
  if (dp.mode !== 'bpf') return memoryLBMaps(cfg.bpfLbMapMax);
  if (cfg.bpfLbMaglevTableSize !== BPF_MAGLEV_TABLE_SIZE) throw maglevSizeUnsupported(cfg.bpfLbMaglevTableSize, BPF_MAGLEV_TABLE_SIZE);
  const replaced: string[] = [];
  return lazyLBMaps(() =>
    openLBMaps(bpf.bpfRoot, cfg.bpfLbMapMax, cfg.bpfLbMaglevTableSize, (r) => {
      replaced.push(r.name);
      log.warn({ map: r.name, path: r.path, have: r.have, want: r.want }, 'replaced a pinned LB map of another layout (its entries are rewritten)');
    }),
  replaced);
}
