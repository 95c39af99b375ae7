/**
 * Cilium's ipcache record in the kvstore (`cilium/state/ip/v1/default/<ip>`, Go's JSON of
 * identity.IPIdentityPair): `{"IP","Mask":null,"HostIP","ID","Key":0,"Metadata","K8sNamespace","K8sPodName"}`.
 * `Metadata` names the owner as `cellium:<cluster>:<node>:<endpoint id>`.
 */
import { isIP } from 'node:net';

/** One endpoint's address as published. */
export interface IPRecord {
  readonly ip: string;
  readonly hostIP: string;
  readonly identity: number;
  readonly node: string;
  readonly cluster: string;
  readonly endpointId: number;
  readonly namespace?: string;
  readonly podName?: string;
}

/** The JSON value of a record. */
export function ipJson(r: IPRecord): string {
  return JSON.stringify({
    IP: r.ip, Mask: null, HostIP: r.hostIP, ID: r.identity, Key: 0,
    Metadata: `cellium:${r.cluster}:${r.node}:${r.endpointId}`,
    K8sNamespace: r.namespace ?? '', K8sPodName: r.podName ?? '',
  });
}

/** Parses a record; undefined when the value is not one (skipped, never trusted). */
export function parseIPJson(text: string): IPRecord | undefined {
  let d: Record<string, unknown>;
  try {
    d = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof d?.IP !== 'string' || !isIP(d.IP) || !Number.isInteger(d.ID) || typeof d.HostIP !== 'string') return undefined;
  const [, cluster = '', node = '', ep = '0'] = typeof d.Metadata === 'string' ? d.Metadata.split(':') : [];
  return {
    ip: d.IP, hostIP: d.HostIP, identity: d.ID as number, node, cluster, endpointId: Number(ep) || 0,
    ...(typeof d.K8sNamespace === 'string' && d.K8sNamespace ? { namespace: d.K8sNamespace } : {}),
    ...(typeof d.K8sPodName === 'string' && d.K8sPodName ? { podName: d.K8sPodName } : {}),
  };
}
