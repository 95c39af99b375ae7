/**
 * CHECK: the attachment's endpoint exists and is healthy, its programs are attached (asked of the
 * datapath now), its host side is there, and the interface
 * and addresses inside the namespace are the ones the prevResult says.
 */
import type { CniDeps } from './deps.js';
import { checkFailed, invalidConfig } from './errors.js';
import { attachmentKey } from './ledger.js';
import type { ParsedCall } from './netconf.js';

/** Runs CHECK (the caller holds the attachment's lock); throws a CniFailure on the first mismatch. */
export async function runCheck(d: CniDeps, call: ParsedCall): Promise<void> {
  const { req, conf } = call;
  const prev = conf.prevResult;
  if (!prev) throw invalidConfig('prevResult', 'is required for CHECK');
  const ep = d.manager.lookup(`cni-attachment-id:${attachmentKey(req.containerId, req.ifName)}`);
  if (!ep) throw checkFailed(`container ${req.containerId} interface ${req.ifName} has no endpoint`);
  const health = ep.health();
  if (ep.state !== 'ready' || health.overallHealth !== 'OK') {
    throw checkFailed(`endpoint ${ep.id} is ${ep.state} (health ${health.overallHealth})`, JSON.stringify(health));
  }
  // the kernel now, not the last periodic check: programs detached by hand since then fail CHECK
  const missing = await d.manager.verifyPrograms?.(ep.id);
  if (missing) throw checkFailed(`endpoint ${ep.id}: ${missing}`);
  const index = prev.interfaces.findIndex((i) => i.name === req.ifName && i.sandbox !== undefined);
  if (index < 0) throw checkFailed(`prevResult.interfaces has no ${req.ifName} inside a sandbox`);
  const want = prev.interfaces[index]!;
  if (ep.ifName && !(await d.net.inHost((h) => h.getLink(ep.ifName!)))) throw checkFailed(`host interface ${ep.ifName} of endpoint ${ep.id} is gone`);
  if (!d.net.netnsExists(req.netns)) throw checkFailed(`network namespace ${req.netns} does not exist`);
  const { link, addrs } = await d.net.inNetns(req.netns, async (ops) => {
    const l = await ops.getLink(req.ifName);
    return { link: l, addrs: l ? await ops.listAddresses(req.ifName) : [] };
  });
  if (!link) throw checkFailed(`${req.ifName} does not exist in ${req.netns}`);
  if (want.mac && link.mac !== want.mac) throw checkFailed(`${req.ifName} has MAC ${link.mac}, prevResult.interfaces[${index}].mac is ${want.mac}`);
  if (want.mtu && link.mtu !== want.mtu) throw checkFailed(`${req.ifName} has MTU ${link.mtu}, prevResult.interfaces[${index}].mtu is ${want.mtu}`);
  const have = new Set(addrs.map((a) => `${a.address}/${a.prefixLength}`));
  prev.ips.forEach((ip, i) => {
    if (ip.interface !== undefined && ip.interface !== index) return;
    if (!have.has(ip.address)) throw checkFailed(`prevResult.ips[${i}].address ${ip.address} is not on ${req.ifName} (it has ${[...have].join(', ') || 'none'})`);
  });
  const prevAddrs = new Set(prev.ips.map((ip) => ip.address.split('/')[0]));
  for (const ip of [ep.ipv4, ep.ipv6]) {
    if (ip && !prevAddrs.has(ip)) throw checkFailed(`endpoint ${ep.id} has address ${ip}, which prevResult.ips lacks`);
  }
}
