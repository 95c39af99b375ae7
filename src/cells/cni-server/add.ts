/**
 * ADD, as cilium-cni does it, but inside the agent. The address source is chosen once
 * (choose-source.ts): the node pool, the delegated IPAM plugin, or chained (the prevResult's).
 * With the first two, the addresses are taken, the veth pair is created and configured, and the
 * endpoint is created with `sync-build-endpoint` so the answer waits for the datapath; chained,
 * the previous plugin's interface and addresses are used and the prevResult is returned with the
 * host side added. Any failure undoes every step done so far, in reverse.
 */
import type { ChainedSource, ConfiguredSource, Undo } from './address-source.js';
import { defaultRoutes } from './address-source.js';
import { vethOffload } from './bigtcp.js';
import { addSource, attachmentSource } from './choose-source.js';
import type { CniDeps } from './deps.js';
import { changeRequest, createEndpoint, type EndpointLinks } from './endpoint-request.js';
import { asCniFailure, interfaceTaken } from './errors.js';
import { attachmentKey } from './ledger.js';
import type { ParsedCall } from './netconf.js';
import { interfaceOwner } from './owners.js';
import { activateHostVeth, configurePodVeth, createPodVeth, findChainedLinks, hostIfName, podCidr, randomPodMac } from './plumbing.js';
import type { CniResultModel, ResultIP } from './result.js';
import { refuseTakenInterface } from './validate-target.js';

/** Chained: the endpoint on the previous plugin's interface, with the prevResult's addresses. */
async function addChained(d: CniDeps, call: ParsedCall, source: ChainedSource, undo: Undo): Promise<CniResultModel> {
  const links = await findChainedLinks(d.net, call.req.netns, call.req.ifName);
  const holder = interfaceOwner(d.manager, links.host.name);
  if (holder) throw interfaceTaken(`chaining onto ${call.req.ifName} in ${call.req.netns} (prevResult)`, links.host.name, holder);
  await createEndpoint(d, changeRequest(call, links, source.addresses()), undefined, undo);
  return source.result(links.host);
}

/** The node pool's or the plugin's addresses on a new veth pair, and the endpoint on its host side. */
async function addVeth(d: CniDeps, call: ParsedCall, source: ConfiguredSource, signal: AbortSignal | undefined, undo: Undo): Promise<CniResultModel> {
  const { req, conf } = call;
  const hostName = hostIfName(req.containerId, req.ifName);
  const holder = interfaceOwner(d.manager, hostName);
  if (holder) throw interfaceTaken(`creating the host side of ${req.ifName}`, hostName, holder);
  const got = await source.acquire(undo);
  const { addresses } = got;
  const mtu = conf.mtu ?? d.cfg.cniMtu;
  const setup = { hostName, ifName: req.ifName, netns: req.netns, mtu, addresses, podMac: randomPodMac(), offload: await vethOffload(d), ...(got.routes ? { routes: got.routes } : {}) };
  // journalled before the pair exists: after a crash at any later point, the restarted agent knows it
  // (only the node pool's addresses: a delegated plugin's are released by its own DEL)
  await d.journal.write({ containerId: req.containerId, ifName: req.ifName, hostName, ips: got.pooled });
  undo.push([`delete ${hostName}`, async () => {
    await d.net.inHost((h) => h.deleteLink(hostName));
    await d.journal.remove(hostName); // only once the interface is gone
  }]);
  const host = await createPodVeth(d.net, setup);
  // The endpoint (program load, maps, state) is built while the pod side is configured: it needs
  // only the pair's indexes and MACs. Both must succeed; the undo list takes back what did. The
  // host side comes up last, once the endpoint's program is attached.
  const known: EndpointLinks = { host, pod: { mac: setup.podMac } };
  const [configured, created] = await Promise.allSettled([configurePodVeth(d.net, setup, host), createEndpoint(d, changeRequest(call, known, addresses, got.ipamSource), signal, undo)]);
  if (configured.status === 'rejected') throw configured.reason;
  if (created.status === 'rejected') throw created.reason;
  await activateHostVeth(d.net, setup);
  const ips: ResultIP[] = addresses.map((a) => ({ address: podCidr(a), gateway: a.gateway, interface: 1 }));
  return {
    interfaces: [
      { name: host.name, mac: host.mac },
      { name: req.ifName, mac: setup.podMac, mtu: setup.mtu, sandbox: req.netns },
    ],
    ips,
    routes: got.routes ?? defaultRoutes(addresses),
    dns: {},
  };
}

/** Runs ADD (the caller holds the attachment's lock). */
export async function runAdd(d: CniDeps, call: ParsedCall, signal?: AbortSignal): Promise<CniResultModel> {
  const { req } = call;
  const source = addSource(d, call);
  await refuseTakenInterface(d, call, source.kind === 'chained');
  if (d.manager.lookup(`cni-attachment-id:${attachmentKey(req.containerId, req.ifName)}`)) {
    d.log.info({ containerID: req.containerId, ifName: req.ifName }, 'CNI ADD: the attachment already has an endpoint; replacing it');
    // a plugin releases the old addresses first: host-local refuses a second allocation for the same container
    await attachmentSource(d, call).remove('repeated ADD');
  }
  const undo: Undo = [];
  try {
    return source.kind === 'chained' ? await addChained(d, call, source, undo) : await addVeth(d, call, source, signal, undo);
  } catch (err) {
    for (const [what, fn] of undo.reverse()) {
      try {
        await fn();
      } catch (e) {
        d.log.warn({ containerID: req.containerId, step: what, err: (e as Error).message }, 'CNI ADD rollback step failed');
      }
    }
    throw asCniFailure(err);
  }
}
