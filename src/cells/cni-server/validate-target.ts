/**
 * The checks of an ADD's or CHECK's target that need the system: CNI_NETNS must be a network
 * namespace and not the agent's own (plumbing that one would give the agent's namespace a pod
 * interface and a default route) nor PID 1's; a plain ADD must not name an interface the pod
 * already has (a chained ADD names the previous plugin's interface on purpose, CHECK names the one
 * the ADD made). Failures are code 7 naming the variable; nothing has been created when they throw.
 */
import type { CniDeps } from './deps.js';
import { invalidEnv, quoteValue } from './errors.js';
import { attachmentKey } from './ledger.js';
import type { ParsedCall } from './netconf.js';
import type { NetOps } from './netops.js';
import { IFNAME_FIX, NETNS_FIX } from './validate.js';

/** Throws unless `netns` names a network namespace that is neither the agent's nor PID 1's. */
export async function checkNetns(net: NetOps, netns: string): Promise<void> {
  const probe = await net.probeNetns(netns);
  const value = quoteValue(netns);
  switch (probe.kind) {
    case 'netns':
      return;
    case 'own':
      throw invalidEnv('CNI_NETNS', `${value} is the cellium agent's own network namespace, which a pod never uses`, NETNS_FIX);
    case 'init':
      throw invalidEnv('CNI_NETNS', `${value} is the network namespace of PID 1 (the host's), which a pod never uses`, NETNS_FIX);
    case 'missing':
      throw invalidEnv('CNI_NETNS', `${value} does not exist`, NETNS_FIX);
    case 'other':
      throw invalidEnv('CNI_NETNS', `${value} is not a network namespace: it is ${probe.what}`, NETNS_FIX);
  }
}

/**
 * A plain ADD (not chained, not repeating an ADD of the same attachment, whose interface it
 * replaces) must not name an interface that exists in the pod: `lo`, or one another plugin made.
 */
export async function refuseTakenInterface(d: CniDeps, call: ParsedCall, chained: boolean): Promise<void> {
  const { req } = call;
  if (chained || d.manager.lookup(`cni-attachment-id:${attachmentKey(req.containerId, req.ifName)}`)) return;
  const taken = await d.net.inNetns(req.netns, (ops) => ops.getLink(req.ifName));
  if (!taken) return;
  throw invalidEnv(
    'CNI_IFNAME',
    `${quoteValue(req.ifName)} already exists in ${req.netns} (index ${taken.index}${taken.kind ? `, a ${taken.kind}` : ''}); an ADD creates its interface and never takes over one`,
    `${IFNAME_FIX}, naming an interface the pod does not have yet`,
  );
}
