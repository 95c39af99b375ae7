/**
 * When opening the LB maps replaced pinned ones (a restart with another --bpf-lb-map-max, or an
 * upgrade of their layout), the endpoints restored before hold programs bound to the old maps,
 * which nothing writes any more: they are reloaded so every program reads the maps the reconciler
 * writes. Wired by the agent (src/cells.ts), which has both cells; a hive with the loadbalancer
 * cell alone has no endpoints to rebind.
 */
import { invoke, type Cell, type DepsValues } from '../../hive/cell.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { LBMapsToken } from '../../datapath/lb-maps.js';
import { EndpointManagerToken } from '../endpoint/index.js';

/** What the rebind needs. */
const rebindDeps = { maps: LBMapsToken, endpoints: EndpointManagerToken, lc: LifecycleToken, log: LoggerToken } as const;

/** Reloads the endpoints' programs at start when the LB maps were replaced (see the module comment). */
export function rebindOnReplacedLBMaps({ maps, endpoints, lc, log }: DepsValues<typeof rebindDeps>): void {
  lc.append({
    name: 'lb-maps-rebind',
    onStart: () => {
      const replaced = maps.replaced ?? [];
      const eps = endpoints.getEndpoints().length;
      if (!replaced.length || !eps) return;
      log.info({ maps: replaced, endpoints: eps }, 'LB maps replaced: reloading the endpoints\' programs so they read the new ones');
      // in the background, queued behind the restore's own regenerations
      void endpoints.regenerateAll(`the LB maps ${replaced.join(', ')} were replaced`, 'rewrite+load').catch((err: unknown) =>
        log.error({ err: (err as Error).message }, 'reloading the endpoints\' programs after the LB maps were replaced failed; they read the old maps until their next reload'));
    },
  });
}

/** The agent's invoke of {@link rebindOnReplacedLBMaps}. */
export const lbRebindCell: Cell = invoke('lb-maps-rebind', rebindOnReplacedLBMaps, rebindDeps);
