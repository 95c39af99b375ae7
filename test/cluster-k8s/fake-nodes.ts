// A fake CiliumNode API for the cluster cell's unit tests: CiliumNodes in memory with
// resourceVersions, and the Kubernetes Nodes' uids.
import { podCIDRsOf, type CiliumNode } from '../../src/cells/cluster/index.js';

/** CiliumNodes in memory with resourceVersions (an update at an old version is refused, as the apiserver's 409). */
export class FakeNodes {
  /** Kubernetes Nodes by name -> uid (nodeUid). */
  readonly k8sNodes = new Map<string, string>();
  readonly objs = new Map<string, CiliumNode>();
  private rv = 1;
  writes = 0;
  add(name: string, podCIDRs: string[] = [], annotations?: Record<string, string>): void {
    this.objs.set(name, { metadata: { name, resourceVersion: String(this.rv++), ...(annotations ? { annotations } : {}) }, spec: { addresses: [{ type: 'InternalIP', ip: '10.0.0.1' }], ipam: { podCIDRs } } });
  }
  async list(): Promise<CiliumNode[]> {
    return [...this.objs.values()].map((o) => structuredClone(o));
  }
  async get(name: string): Promise<CiliumNode | undefined> {
    const o = this.objs.get(name);
    return o && structuredClone(o);
  }
  async create(cn: CiliumNode): Promise<CiliumNode | undefined> {
    if (this.objs.has(cn.metadata.name)) return undefined;
    const made = { ...cn, metadata: { ...cn.metadata, resourceVersion: String(this.rv++) } };
    this.objs.set(cn.metadata.name, made);
    return structuredClone(made);
  }
  async update(cn: CiliumNode): Promise<CiliumNode | undefined> {
    const cur = this.objs.get(cn.metadata.name);
    if (!cur || cur.metadata.resourceVersion !== cn.metadata.resourceVersion) return undefined;
    this.writes++;
    const next = { ...cn, metadata: { ...cn.metadata, resourceVersion: String(this.rv++) } };
    this.objs.set(cn.metadata.name, next);
    return structuredClone(next);
  }
  async nodeUid(name: string): Promise<string | undefined> {
    return this.k8sNodes.get(name);
  }
  cidrs(): Record<string, string[]> {
    return Object.fromEntries([...this.objs].map(([k, v]) => [k, podCIDRsOf(v)]));
  }
}
