/**
 * ADD, as cilium-cni does it, but inside the agent: allocate the pod's IPs from IPAM (owner: the pod
 * `ns/name`, else the container id; expiring until the endpoint confirms them), create and configure
 * the veth pair, then create the endpoint with `sync-build-endpoint` so the answer waits for the
 * datapath. With a prevResult whose interface exists in the namespace (generic-veth chaining) the
 * interface and IPs of the previous plugin are used instead, and the previous result is returned
 * with the host side added. Any failure undoes every step done so far, in reverse.
 */
import { CniErrorCode } from '../../cni/protocol.js';
import type { EndpointChangeRequest, EndpointView } from '../endpoint/index.js';
import type { Family, IPAllocation } from '../ipam/types.js';
import type { CniDeps } from './deps.js';
import { releaseLedgerIPs, removeAttachment } from './del.js';
import { CelliumCniCode, CniFailure, asCniFailure, interfaceTaken } from './errors.js';
import { attachmentKey } from './ledger.js';
import { interfaceOwner } from './owners.js';
import { vethOffload } from './bigtcp.js';
import { delegatedAdd, delegatedDel, delegatedDelType, delegatedType, findPlugin } from './delegated-ipam.js';
import { CNI_NETWORK_PROPERTY, IPAM_SOURCE_PROPERTY } from '../endpoint/index.js';
import type { ParsedCall } from './netconf.js';
import { activateHostVeth, configurePodVeth, createPodVeth, findChainedLinks, hostIfName, podCidr, randomPodMac, type PodAddress } from './plumbing.js';
import type { CniResultModel, ResultIP } from './result.js';
import type { LinkInfo } from '../../netlink/index.js';
import { refuseTakenInterface } from './validate-target.js';

/** How long an ADD's IPs wait for their endpoint before IPAM takes them back (agent crash mid-ADD). */
export const ADD_IP_EXPIRATION_MS = 10 * 60_000;

type Undo = Array<[string, () => Promise<unknown> | unknown]>;

/** The IPAM owner of an attachment's IPs: the pod (`ns/name`) when known, else the container id. */
export function ipOwner(call: ParsedCall): string {
  const { podNamespace, podName } = call.args;
  return podNamespace && podName ? `${podNamespace}/${podName}` : call.req.containerId;
}

/** What an endpoint's change request takes from the pod's links. */
type EndpointLinks = { readonly host: Pick<LinkInfo, 'name' | 'index' | 'mac'>; readonly pod: Pick<LinkInfo, 'mac'> };

/** The prevResult interface this ADD chains onto: ifName inside this netns, when there is one. */
export function chainedInterfaceIndex(call: ParsedCall): number {
  const prev = call.conf.prevResult;
  if (!prev) return -1;
  return prev.interfaces.findIndex((i) => i.name === call.req.ifName && (i.sandbox === undefined || i.sandbox === call.req.netns));
}

function allocate(d: CniDeps, call: ParsedCall, undo: Undo): IPAllocation[] {
  const owner = ipOwner(call);
  const key = attachmentKey(call.req.containerId, call.req.ifName);
  const families = d.ipam.status().map((p) => p.family);
  if (families.length === 0) throw new CniFailure(CelliumCniCode.IPAllocationFailed, 'IPAM has no pool: start the agent with --ipv4-range or --ipv6-range');
  const got: IPAllocation[] = [];
  for (const family of ['ipv4', 'ipv6'] as Family[]) {
    if (!families.includes(family)) continue;
    let a: IPAllocation;
    try {
      a = d.ipam.allocateNext(family, owner, { expirationMs: ADD_IP_EXPIRATION_MS });
    } catch (err) {
      throw new CniFailure(CelliumCniCode.IPAllocationFailed, `allocating an ${family} address for ${owner}: ${(err as Error).message}`);
    }
    d.ledger.record({ ip: a.ip, owner, attachment: key });
    undo.push([`release ${a.ip}`, () => releaseLedgerIPs(d, key)]);
    got.push(a);
  }
  return got;
}

/** What a delegated IPAM plugin gave: the pod's addresses (each with its family's gateway) and routes. */
interface Delegated {
  readonly type: string;
  readonly addresses: PodAddress[];
  readonly routes: { dst: string; gw: string }[];
}

/**
 * Runs the IPAM plugin's ADD and takes its addresses, gateways and routes. The attachment is
 * recorded first and the plugin's DEL goes on the undo list before the ADD runs: a plugin that
 * allocated and then failed, timed out or printed an unusable result is still asked to release
 * (DEL is idempotent), and a release that fails stays recorded for the next GC.
 */
async function allocateDelegated(d: CniDeps, type: string, call: ParsedCall, undo: Undo): Promise<Delegated> {
  const { containerId, ifName } = call.req;
  findPlugin(type, call.req.path); // a plugin that is not there took nothing: no record, no DEL
  await d.ipamRecords.write({ containerId, ifName, network: call.conf.name, plugin: type });
  undo.push([`IPAM plugin ${type} DEL`, async () => {
    await delegatedDel(type, call);
    await d.ipamRecords.remove(containerId, ifName);
  }]);
  const result = await delegatedAdd(type, call);
  const addresses: PodAddress[] = [];
  for (const ip of result.ips) {
    const family = familyOf(ip.address);
    if (addresses.some((a) => a.family === family)) continue; // one address per family, as the endpoint has
    const gateway = ip.gateway ?? result.routes.find((r) => r.gw && familyOf(r.gw) === family)?.gw;
    if (!gateway) throw new CniFailure(CelliumCniCode.IPAllocationFailed, `IPAM plugin ${type} gave ${ip.address} without a gateway: set one in the ipam section (e.g. ranges[].gateway)`);
    addresses.push({ ip: ip.address.split('/')[0]!, family, gateway });
  }
  const gw = (dst: string): string => addresses.find((a) => a.family === familyOf(dst.split('/')[0]!))?.gateway ?? '';
  const routes = result.routes.map((r) => ({ dst: r.dst, gw: r.gw ?? gw(r.dst) })).filter((r) => r.gw !== '');
  return { type, addresses, routes: routes.length ? routes : addresses.map((a) => ({ dst: a.family === 'ipv4' ? '0.0.0.0/0' : '::/0', gw: a.gateway })) };
}

function changeRequest(call: ParsedCall, links: EndpointLinks, addrs: readonly { ip: string; family: Family; expirationUUID?: string }[], ipamSource?: string): EndpointChangeRequest {
  const { req, args } = call;
  const addressing: Record<string, string> = {};
  for (const a of addrs) {
    if (addressing[a.family]) continue;
    addressing[a.family] = a.ip;
    if (a.expirationUUID) addressing[`${a.family}-expiration-uuid`] = a.expirationUUID;
  }
  const pod = args.podNamespace && args.podName;
  return {
    'container-id': req.containerId,
    'container-interface-name': req.ifName,
    'interface-name': links.host.name,
    'interface-index': links.host.index,
    mac: links.pod.mac,
    'host-mac': links.host.mac,
    addressing,
    ...(args.podName ? { 'container-name': args.podName } : {}),
    ...(pod ? { 'k8s-pod-name': args.podName, 'k8s-namespace': args.podNamespace } : {}),
    ...(args.podUid ? { 'k8s-uid': args.podUid } : {}),
    properties: { [CNI_NETWORK_PROPERTY]: call.conf.name, ...(ipamSource ? { [IPAM_SOURCE_PROPERTY]: ipamSource } : {}) },
    'sync-build-endpoint': true,
  };
}

async function createEndpoint(d: CniDeps, req: EndpointChangeRequest, signal: AbortSignal | undefined, undo: Undo): Promise<EndpointView> {
  let ep: EndpointView;
  try {
    ep = await d.endpoints.createEndpoint({ signal }, req);
  } catch (err) {
    const field = (err as { field?: string }).field;
    throw new CniFailure(CelliumCniCode.EndpointFailed, `creating the endpoint${field ? ` (field ${field})` : ''}: ${(err as Error).message}`);
  }
  undo.push([`delete endpoint ${ep.id}`, () => d.endpoints.deleteEndpoint({}, String(ep.id))]);
  return ep;
}

function familyOf(ip: string): Family {
  return ip.includes(':') ? 'ipv6' : 'ipv4';
}

async function addChained(d: CniDeps, call: ParsedCall, index: number, undo: Undo): Promise<CniResultModel> {
  const prev = call.conf.prevResult!;
  const links = await findChainedLinks(d.net, call.req.netns, call.req.ifName);
  const holder = interfaceOwner(d.manager, links.host.name);
  if (holder) throw interfaceTaken(`chaining onto ${call.req.ifName} in ${call.req.netns} (prevResult)`, links.host.name, holder);
  const ips = prev.ips.filter((ip) => ip.interface === undefined || ip.interface === index);
  if (ips.length === 0) throw new CniFailure(CniErrorCode.InvalidConfig, `invalid network configuration: prevResult.ips has no address for interface ${call.req.ifName}`);
  const addrs = ips.map((ip) => ({ ip: ip.address.split('/')[0]!, family: familyOf(ip.address) }));
  await createEndpoint(d, changeRequest(call, links, addrs), undefined, undo);
  const known = prev.interfaces.some((i) => i.name === links.host.name && i.sandbox === undefined);
  return known ? prev : { ...prev, interfaces: [...prev.interfaces, { name: links.host.name, mac: links.host.mac }] };
}

async function addVeth(d: CniDeps, call: ParsedCall, signal: AbortSignal | undefined, undo: Undo): Promise<CniResultModel> {
  const { req, conf } = call;
  const hostName = hostIfName(req.containerId, req.ifName);
  const holder = interfaceOwner(d.manager, hostName);
  if (holder) throw interfaceTaken(`creating the host side of ${req.ifName}`, hostName, holder);
  const type = delegatedType(d, call);
  const delegated = type ? await allocateDelegated(d, type, call, undo) : undefined;
  const pooled = delegated ? [] : allocate(d, call, undo);
  const allocs = delegated ? delegated.addresses : pooled;
  const addresses: PodAddress[] = allocs.map((a) => ({ ip: a.ip, family: a.family, gateway: a.gateway }));
  const mtu = conf.mtu ?? d.cfg.cniMtu;
  const setup = { hostName, ifName: req.ifName, netns: req.netns, mtu, addresses, podMac: randomPodMac(), offload: await vethOffload(d), ...(delegated ? { routes: delegated.routes } : {}) };
  // journalled before the pair exists: after a crash at any later point, the restarted agent knows it
  // (only the node pool's addresses: a delegated plugin's are released by its own DEL)
  await d.journal.write({ containerId: req.containerId, ifName: req.ifName, hostName, ips: pooled.map((a) => ({ ip: a.ip, owner: a.owner })) });
  undo.push([`delete ${hostName}`, async () => {
    await d.net.inHost((h) => h.deleteLink(hostName));
    await d.journal.remove(hostName); // only once the interface is gone
  }]);
  const host = await createPodVeth(d.net, setup);
  // The endpoint (program load, maps, state) is built while the pod side is configured: it needs
  // only the pair's indexes and MACs. Both must succeed; the undo list takes back what did. The
  // host side comes up last, once the endpoint's program is attached.
  const known: EndpointLinks = { host, pod: { mac: setup.podMac } };
  const [configured, created] = await Promise.allSettled([configurePodVeth(d.net, setup, host), createEndpoint(d, changeRequest(call, known, allocs, delegated && `delegated-plugin:${delegated.type}`), signal, undo)]);
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
    routes: delegated ? delegated.routes : addresses.map((a) => ({ dst: a.family === 'ipv4' ? '0.0.0.0/0' : '::/0', gw: a.gateway })),
    dns: {},
  };
}

/** Runs ADD (the caller holds the attachment's lock). */
export async function runAdd(d: CniDeps, call: ParsedCall, signal?: AbortSignal): Promise<CniResultModel> {
  const { req } = call;
  await refuseTakenInterface(d, call, chainedInterfaceIndex(call) >= 0);
  const key = attachmentKey(req.containerId, req.ifName);
  if (d.manager.lookup(`cni-attachment-id:${key}`)) {
    d.log.info({ containerID: req.containerId, ifName: req.ifName }, 'CNI ADD: the attachment already has an endpoint; replacing it');
    const plugin = delegatedDelType(d, call);
    await removeAttachment(d, req.containerId, req.ifName, 'repeated ADD');
    // the plugin releases the old addresses first: host-local refuses a second allocation for the same container
    if (plugin) {
      await delegatedDel(plugin, call);
      await d.ipamRecords.remove(req.containerId, req.ifName);
    }
  }
  const undo: Undo = [];
  try {
    const index = chainedInterfaceIndex(call);
    return index >= 0 ? await addChained(d, call, index, undo) : await addVeth(d, call, signal, undo);
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
