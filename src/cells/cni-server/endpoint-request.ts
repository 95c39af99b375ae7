/**
 * The endpoint an ADD creates: its change request (the attachment, the pod's links and addresses,
 * the CNI network and where the addresses came from; built synchronously, `sync-build-endpoint`)
 * and its creation, whose undo deletes it.
 */
import type { EndpointChangeRequest, EndpointView } from '../endpoint/index.js';
import { CNI_NETWORK_PROPERTY, IPAM_SOURCE_PROPERTY } from '../endpoint/index.js';
import type { LinkInfo } from '../../netlink/index.js';
import type { EndpointAddress, Undo } from './address-source.js';
import type { CniDeps } from './deps.js';
import { CelliumCniCode, CniFailure } from './errors.js';
import type { ParsedCall } from './netconf.js';

/** What an endpoint's change request takes from the pod's links. */
export type EndpointLinks = { readonly host: Pick<LinkInfo, 'name' | 'index' | 'mac'>; readonly pod: Pick<LinkInfo, 'mac'> };

/** The change request of an ADD's endpoint (the first address of each family is the endpoint's). */
export function changeRequest(call: ParsedCall, links: EndpointLinks, addrs: readonly EndpointAddress[], ipamSource?: string): EndpointChangeRequest {
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

/** Creates the endpoint (code 102 naming the field on failure); its deletion goes on `undo`. */
export async function createEndpoint(d: CniDeps, req: EndpointChangeRequest, signal: AbortSignal | undefined, undo: Undo): Promise<EndpointView> {
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
