/**
 * The EndpointAPIManager (Cilium's pkg/endpoint/api endpointAPIManager): the API's entry point.
 * createEndpoint: creator -> refuse a duplicate ID, CNI attachment or IP (409 naming which) ->
 * merge labels (+ `k8s:io.kubernetes.pod.namespace=<ns>`) -> EndpointManager.addEndpoint (which
 * records the addresses with IPAM: reserved, taken over, or out-of-pool) -> first
 * regeneration, awaited with sync-build-endpoint, then the creation hooks (Kubernetes: the
 * CiliumEndpoint written); on a failure of either the endpoint is removed and the error returned. Also delete, patch, patch labels and patch config.
 */
import type { Logger } from '../../hive/index.js';
import { canonicalAddr } from '../../lib/addr.js';
import type { Endpoint } from './endpoint.js';
import { labelsFromChangeRequest, specFromChangeRequest, type EndpointCreator } from './creator.js';
import { EndpointError } from './errors.js';
import type { EndpointManagerImpl } from './manager.js';
import type { EndpointChangeRequest } from './model.js';
import { ENDPOINT_OPTIONS, type EndpointSpec } from './spec.js';
import type { CallContext, EndpointAPIManager, EndpointCreationHook, EndpointView, PodLabelSource } from './types.js';
import type { NamedPort } from '../policy/types.js';

/** The label Cilium gives every pod endpoint for its namespace. */
export const NAMESPACE_LABEL = 'k8s:io.kubernetes.pod.namespace';

/** The change request describing an existing spec (the base a PATCH is applied to). */
export function requestFromSpec(s: EndpointSpec): EndpointChangeRequest {
  return {
    'container-id': s.containerId,
    'container-name': s.containerName,
    'container-interface-name': s.containerIfName,
    'interface-name': s.ifName,
    'interface-index': s.ifIndex,
    ...(s.mac ? { mac: s.mac } : {}),
    ...(s.hostMac ? { 'host-mac': s.hostMac } : {}),
    addressing: { ipv4: s.ipv4, ipv6: s.ipv6, 'ipv4-pool-name': s.ipv4PoolName, 'ipv6-pool-name': s.ipv6PoolName },
    'k8s-pod-name': s.podName,
    'k8s-namespace': s.namespace,
    'k8s-uid': s.k8sUid,
    'netns-cookie': s.netnsCookie,
    'datapath-configuration': s.datapathConfiguration,
    properties: s.properties,
  };
}

/**
 * The named container ports of a pod endpoint's pod from the sources that know them (undefined when
 * none does, or it is no pod endpoint).
 */
function namedPortsOfPod(sources: readonly PodLabelSource[], ep: Endpoint): NamedPort[] | undefined {
  const { namespace, podName } = ep.spec;
  if (!namespace || !podName) return undefined;
  const found = sources.filter((s) => s.enabled && s.namedPorts).map((s) => s.namedPorts!(namespace, podName));
  return found.some((f) => f !== undefined) ? found.flatMap((f) => f ?? []) : undefined;
}

/** The EndpointAPIManager implementation. */
export class EndpointAPIManagerImpl implements EndpointAPIManager {
  constructor(
    private readonly creator: EndpointCreator,
    private readonly manager: EndpointManagerImpl,
    private readonly log: Logger,
    /** Settles once restored endpoints hold their IDs and IPs; creations wait for it. */
    private readonly restored: Promise<unknown> = Promise.resolve(),
    /** Orchestrators a pod endpoint's labels come from (Kubernetes: its Pod and Namespace). */
    private readonly podLabels: readonly PodLabelSource[] = [],
    /** Steps a synchronously built endpoint's creation waits for (Kubernetes: its CiliumEndpoint). */
    private readonly creationHooks: readonly EndpointCreationHook[] = [],
  ) {}

  /** See EndpointAPIManager. Waits until endpoints restored at start hold their IDs and IPs. */
  async createEndpoint(ctx: CallContext, req: EndpointChangeRequest): Promise<EndpointView> {
    const ep = await this.creator.newEndpointFromChangeModel(ctx, req);
    await this.restored;
    const podLabels = await this.podLabelsOf(ep, ctx.signal);
    this.manager.checkConflicts(ep);
    if (ep.namespace) ep.mergeLabels([`${NAMESPACE_LABEL}=${ep.namespace}`]);
    if (podLabels) ep.mergeLabels(podLabels);
    ctx.signal?.throwIfAborted();
    await this.manager.addEndpoint(ep);
    if (podLabels) {
      this.refreshPodLabels(ep, req, podLabels);
      ep.setNamedPorts(namedPortsOfPod(this.podLabels, ep) ?? []);
    }
    const first = ep.regenerate('Initial build on endpoint creation', 'rewrite+load');
    if (!req['sync-build-endpoint']) {
      first.catch((err: Error) => this.log.warn({ endpointID: ep.id, err: err.message }, 'initial endpoint build failed; retrying'));
      this.log.info({ endpointID: ep.id, containerID: ep.containerId, ipv4: ep.ipv4, ipv6: ep.ipv6 }, 'Successful endpoint creation');
      return ep;
    }
    try {
      await first;
    } catch (err) {
      await this.manager.removeEndpoint(ep, 'initial build failed', { noIPRelease: true }).catch(() => undefined);
      throw new EndpointError('failed', `endpoint ${ep.id} was removed: its first regeneration failed: ${(err as Error).message}`);
    }
    for (const hook of this.creationHooks) {
      try {
        await hook.created(ep, ctx.signal);
      } catch (err) {
        await this.manager.removeEndpoint(ep, `${hook.name} failed`, { noIPRelease: true }).catch(() => undefined);
        throw new EndpointError('failed', `endpoint ${ep.id} was removed: ${hook.name}: ${(err as Error).message}`);
      }
    }
    this.log.info({ endpointID: ep.id, containerID: ep.containerId, ipv4: ep.ipv4, ipv6: ep.ipv6 }, 'Successful endpoint creation');
    return ep;
  }

  /** The endpoint behind an API id; throws 400 on a malformed id and 404 when there is none. */
  private mustLookup(id: string): Endpoint {
    const ep = this.manager.lookup(id);
    if (!ep) throw new EndpointError('not-found', `endpoint ${id} not found`);
    return ep;
  }

  /**
   * See EndpointAPIManager. Identity and addressing (id, container-id, container-interface-name,
   * addresses, pod) cannot change; interface, MACs, labels and the rest can. `state` and
   * `sync-build-endpoint` are not applied by a patch.
   */
  async patchEndpoint(ctx: CallContext, id: string, req: EndpointChangeRequest): Promise<EndpointView> {
    ctx.signal?.throwIfAborted();
    const ep = this.mustLookup(id);
    const cur = ep.spec;
    const fixed: Array<[string, unknown, unknown]> = [
      ['/id', req.id || undefined, req.id ? ep.id : undefined],
      ['/container-id', req['container-id'], cur.containerId],
      ['/container-interface-name', req['container-interface-name'], cur.containerIfName],
      ['/addressing/ipv4', req.addressing?.ipv4 && (canonicalAddr(req.addressing.ipv4) ?? req.addressing.ipv4), cur.ipv4],
      ['/addressing/ipv6', req.addressing?.ipv6 && (canonicalAddr(req.addressing.ipv6) ?? req.addressing.ipv6), cur.ipv6],
      ['/k8s-pod-name', req['k8s-pod-name'], cur.podName],
      ['/k8s-namespace', req['k8s-namespace'], cur.namespace],
    ];
    for (const [field, want, have] of fixed) {
      if (want !== undefined && want !== have) {
        throw new EndpointError('invalid', `${field} of endpoint ${ep.id} cannot be changed (it is ${JSON.stringify(have ?? null)})`, field);
      }
    }
    const base = requestFromSpec(cur);
    const next = specFromChangeRequest({ ...base, ...req, addressing: base.addressing });
    let changed = this.manager.updateSpec(ep, next);
    if (req.labels) {
      const labels = labelsFromChangeRequest(req);
      changed = ep.replaceOriginLabels(ep.namespace ? [...labels, `${NAMESPACE_LABEL}=${ep.namespace}`] : labels) || changed;
    }
    if (changed) await ep.regenerate('endpoint patched via the API');
    return ep;
  }

  /** The orchestrators' labels of a pod endpoint, waiting (bounded) for a pod not seen yet; undefined for other endpoints. */
  private async podLabelsOf(ep: Endpoint, signal?: AbortSignal): Promise<string[] | undefined> {
    const { namespace, podName } = ep.spec;
    const sources = this.podLabels.filter((s) => s.enabled);
    if (!namespace || !podName || !sources.length) return undefined;
    const labels: string[] = [];
    for (const src of sources) {
      try {
        labels.push(...(await src.labelsFor(namespace, podName, signal)));
      } catch (err) {
        throw new EndpointError('failed', `labels of pod ${namespace}/${podName}: ${(err as Error).message}`, '/k8s-pod-name');
      }
    }
    return labels;
  }

  /**
   * A pod's labels that changed between the lookup and the endpoint's addition reached no
   * endpoint (the orchestrator's watcher relabels only added ones): reads them again and replaces.
   */
  private refreshPodLabels(ep: Endpoint, req: EndpointChangeRequest, looked: readonly string[]): void {
    const { namespace, podName } = ep.spec;
    if (!namespace || !podName) return;
    const now = this.podLabels.filter((s) => s.enabled).map((s) => s.current(namespace, podName));
    if (now.some((l) => l === undefined)) return;
    const fresh = now.flatMap((l) => l!);
    if (fresh.join(';') === looked.join(';')) return;
    ep.replaceOriginLabels([...labelsFromChangeRequest(req), `${NAMESPACE_LABEL}=${namespace}`, ...fresh]);
  }

  /** See EndpointAPIManager. */
  async deleteEndpoint(ctx: CallContext, id: string): Promise<void> {
    ctx.signal?.throwIfAborted();
    await this.manager.removeEndpoint(this.mustLookup(id), 'deleted via the API');
  }

  /** See EndpointAPIManager. */
  async deleteEndpointsByContainerID(ctx: CallContext, containerId: string): Promise<number> {
    ctx.signal?.throwIfAborted();
    if (!containerId) throw new EndpointError('invalid', 'container-id must not be empty', '/container-id');
    const eps = this.manager.lookupContainer(containerId);
    await Promise.all(eps.map((ep) => this.manager.removeEndpoint(ep, `container ${containerId} deleted via the API`)));
    return eps.length;
  }

  /** See EndpointAPIManager. Waits for the regeneration that resolves the new identity. */
  async patchLabels(ctx: CallContext, id: string, add: readonly string[], del: readonly string[]): Promise<EndpointView> {
    ctx.signal?.throwIfAborted();
    const ep = this.mustLookup(id);
    if (ep.modifyLabels(add, del)) await ep.regenerate('endpoint labels changed');
    return ep;
  }

  /** See EndpointAPIManager. Unknown options and values are refused naming `/options/<name>`. */
  async patchConfig(ctx: CallContext, id: string, options: Readonly<Record<string, string>>): Promise<EndpointView> {
    ctx.signal?.throwIfAborted();
    const ep = this.mustLookup(id);
    for (const [k, v] of Object.entries(options ?? {})) {
      const allowed = ENDPOINT_OPTIONS[k];
      if (!allowed) {
        throw new EndpointError('invalid', `unknown endpoint option ${JSON.stringify(k)}: expected one of ${Object.keys(ENDPOINT_OPTIONS).join(', ')}`, `/options/${k}`);
      }
      if (!allowed.includes(v)) throw new EndpointError('invalid', `option ${k}: expected one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`, `/options/${k}`);
    }
    if (ep.applyOptions(options)) await ep.regenerate('endpoint configuration changed');
    return ep;
  }
}
