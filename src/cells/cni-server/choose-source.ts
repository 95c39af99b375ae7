/**
 * Which address source a command goes through, decided once per command: an ADD chains onto the
 * prevResult's interface when it names CNI_IFNAME in this sandbox, else takes the source the
 * agent's --ipam names; CHECK takes the --ipam source; DEL (and a repeated ADD's removal of the old
 * attachment) takes the source that gave the attachment its addresses.
 */
import type { AddressSource, ConfiguredSource } from './address-source.js';
import { PrevResultSource, chainedInterfaceIndex } from './chained-source.js';
import type { CniDeps } from './deps.js';
import { ipamPluginType } from './delegated-ipam.js';
import { DelegatedPluginSource, pluginOf } from './delegated-source.js';
import { attachmentKey } from './ledger.js';
import type { ParsedCall } from './netconf.js';
import { NodePoolSource } from './node-pool-source.js';

/** The source --ipam names (nothing is checked yet: see ConfiguredSource.prepare). */
export function configuredSource(d: CniDeps, call: ParsedCall): ConfiguredSource {
  return d.cfg.ipamMode === 'delegated-plugin' ? new DelegatedPluginSource(d, call) : new NodePoolSource(d, call);
}

/** Where an ADD's addresses come from: the prevResult's when it chains, else the --ipam source. */
export function addSource(d: CniDeps, call: ParsedCall): AddressSource {
  const index = chainedInterfaceIndex(call);
  return index >= 0 ? new PrevResultSource(call, index) : configuredSource(d, call);
}

/**
 * The source that gave an existing attachment its addresses, for its removal: the netconf's
 * `ipam.type` plugin when the agent delegates or the attachment's endpoint or IPAM record says a
 * plugin gave them (an agent switched back to cluster-pool still releases them); otherwise the
 * node pool. A DEL without an `ipam` section then has no plugin to release with: it logs why and
 * removes the attachment as the node pool's, so a pod can always be deleted (the record stays for a GC).
 */
export function attachmentSource(d: CniDeps, call: ParsedCall): ConfiguredSource {
  const { containerId, ifName } = call.req;
  const source = d.manager.lookup(`cni-attachment-id:${attachmentKey(containerId, ifName)}`)?.ipamSource;
  const fromPlugin = pluginOf(source) !== undefined || d.ipamRecords.has(containerId, ifName);
  if (d.cfg.ipamMode !== 'delegated-plugin' && !fromPlugin) return new NodePoolSource(d, call);
  const type = ipamPluginType(call.req.stdin);
  if (type) return new DelegatedPluginSource(d, call, type);
  d.log.warn({ containerID: containerId, ifName, source }, 'CNI DEL without an ipam section: no IPAM plugin to release the addresses with');
  return new NodePoolSource(d, call);
}
