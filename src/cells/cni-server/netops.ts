/**
 * The interface work of the CNI server goes through {@link NetOps}: the rtnetlink operations it
 * uses, in the agent's namespace (`host`) and inside a pod's namespace (`inNetns`). The real one is
 * the netlink addon (src/netlink); tests substitute a fake so every rollback path runs unprivileged.
 */
import { existsSync } from 'node:fs';
import { applyNetlinkSteps, probeNetns, withNetlink, type AddressInfo, type LinkInfo, type NetlinkStep, type NetnsProbe, type VethOptions } from '../../netlink/index.js';

/**
 * The link operations of one namespace the CNI server makes one at a time (a subset of Netlink);
 * the changes an ADD makes go through {@link NetOps.applySteps} as batches.
 */
export interface LinkOps {
  createVeth(o: VethOptions): Promise<LinkInfo>;
  getLink(name: string): Promise<LinkInfo | undefined>;
  listLinks(): Promise<LinkInfo[]>;
  deleteLink(name: string): Promise<boolean>;
  listAddresses(dev?: string): Promise<AddressInfo[]>;
}

/** Namespaces and the operations in them. */
export interface NetOps {
  /**
   * Runs fn with operations in the agent's own namespace (the host side of every veth). Each call
   * gets its own netlink socket, so concurrent pods do not queue behind one another.
   */
  inHost<T>(fn: (ops: LinkOps) => Promise<T>): Promise<T>;
  /** Runs fn with operations inside the namespace at `netnsPath`. */
  inNetns<T>(netnsPath: string, fn: (ops: LinkOps) => Promise<T>): Promise<T>;
  /**
   * Applies the steps in order as one batch inside the namespace at netnsPath (the agent's own when
   * undefined); stops at the first failure.
   */
  applySteps(netnsPath: string | undefined, steps: readonly NetlinkStep[]): Promise<void>;
  /** Whether a namespace path exists (DEL of a pod whose namespace is gone). */
  netnsExists(netnsPath: string): boolean;
  /** What a CNI_NETNS path names: a network namespace, the agent's own, a file, nothing (src/lib/netns.ts). */
  probeNetns(netnsPath: string): Promise<NetnsProbe>;
  /** Releases what it holds (agent stop). */
  close(): Promise<void>;
}

/**
 * NetOps over the netlink addon: a short-lived handle per batch, in the host or a pod namespace
 * (opening one is a socket call; 50 concurrent DELs on their own sockets take a third of the time
 * they take queued on one).
 */
export class NetlinkOps implements NetOps {
  /** See NetOps. */
  inHost<T>(fn: (ops: LinkOps) => Promise<T>): Promise<T> {
    return withNetlink(undefined, fn);
  }

  /** See NetOps. */
  inNetns<T>(netnsPath: string, fn: (ops: LinkOps) => Promise<T>): Promise<T> {
    return withNetlink(netnsPath, fn);
  }

  /** See NetOps. */
  applySteps(netnsPath: string | undefined, steps: readonly NetlinkStep[]): Promise<void> {
    return applyNetlinkSteps(netnsPath, steps);
  }

  /** See NetOps. */
  netnsExists(netnsPath: string): boolean {
    return existsSync(netnsPath);
  }

  /** See NetOps. */
  probeNetns(netnsPath: string): Promise<NetnsProbe> {
    return probeNetns(netnsPath);
  }

  /** See NetOps. Nothing is held between batches, so there is nothing to release. */
  async close(): Promise<void> {
    return undefined;
  }
}
