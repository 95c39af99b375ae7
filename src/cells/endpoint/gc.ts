/**
 * Endpoint GC (Cilium's endpoint-gc controller): each round checks every endpoint's host
 * interface; one found gone is marked (health not connected, reported not-ready), and removed on
 * the next round if it is still gone. An interface that came back clears the mark.
 */
import type { Logger } from '../../hive/index.js';
import type { LinkChecker } from '../../datapath/types.js';
import type { EndpointManagerImpl } from './manager.js';
import { isTerminating } from './state.js';

/** What one GC round did. */
export interface GCResult {
  readonly marked: number[];
  readonly removed: number[];
  readonly recovered: number[];
}

/** Runs one GC round. */
export async function gcRound(manager: EndpointManagerImpl, linkExists: LinkChecker, log: Logger): Promise<GCResult> {
  const result: GCResult = { marked: [], removed: [], recovered: [] };
  for (const ep of manager.list()) {
    if (isTerminating(ep.storedState)) continue;
    const present = await linkExists(ep.spec.ifName);
    if (present) {
      if (ep.linkGoneSince) {
        ep.setLinkPresent(true);
        ep.logStatus('ok', `Host interface ${ep.spec.ifName} is back`);
        result.recovered.push(ep.id);
      }
    } else if (ep.linkGoneSince) {
      log.info({ endpointID: ep.id, ifName: ep.spec.ifName, goneSince: ep.linkGoneSince.toISOString() }, 'removing endpoint: its host interface is gone');
      await manager.removeEndpoint(ep, `host interface ${ep.spec.ifName} is gone`);
      result.removed.push(ep.id);
    } else {
      ep.setLinkPresent(false);
      ep.logStatus('failed', `Host interface ${ep.spec.ifName} not found; the endpoint is removed at the next GC round unless it comes back`);
      log.info({ endpointID: ep.id, ifName: ep.spec.ifName }, 'endpoint marked for GC: its host interface is gone');
      result.marked.push(ep.id);
    }
  }
  return result;
}
