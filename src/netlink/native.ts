/** Loads the netlink-native addon (built by scripts/build.d/25-netlink.sh) and types its raw API. */
import { packageRoot } from '../lib/package-root.js';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { AddressInfo } from './types.js';

/** A link as the addon returns it. */
export interface RawLink {
  index: number;
  name: string;
  mac: string;
  mtu: number;
  flags: number;
  operstate: number;
  kind: string;
  parent: number;
  master: number;
  linkNetnsId: number;
  gsoMaxSize?: number;
  groMaxSize?: number;
  tsoMaxSize?: number;
  gsoIpv4MaxSize?: number;
  groIpv4MaxSize?: number;
}

/** An address as the addon returns it: already the public shape. */
export type RawAddress = AddressInfo;

/** A route as the addon returns it ("" for an absent gateway or source). */
export interface RawRoute {
  family: 4 | 6;
  dst: string;
  gateway: string;
  src: string;
  oif: number;
  scope: number;
  protocol: number;
  type: number;
  table: number;
  flags: number;
  priority: number;
}

/** A neighbour as the addon returns it. */
export interface RawNeighbor {
  family: 4 | 6;
  index: number;
  address: string;
  mac: string;
  state: number;
}

/** A route description as the addon takes it. */
export interface RawRouteSpec {
  dst: string;
  gateway?: string;
  dev?: string;
  src?: string;
  scope?: number;
  onlink?: boolean;
  table?: number;
  priority?: number;
  mtu?: number;
}

/** The addon's handle: every method runs on a libuv worker thread. */
export interface RawHandle {
  /** Resolves with the new local side when the kernel echoes it (>= 6.3), else null. */
  createVeth(name: string, peer: string, mtu: number, peerNetns: string, mac: string, peerMac: string): Promise<RawLink | null>;
  setLink(name: string, change: { up?: boolean; mtu?: number; mac?: string; name?: string; netns?: string }): Promise<void>;
  getLink(name: string): Promise<RawLink | null>;
  listLinks(): Promise<RawLink[]>;
  deleteLink(name: string): Promise<boolean>;
  addAddress(dev: string, cidr: string, nodad: boolean): Promise<void>;
  deleteAddress(dev: string, cidr: string): Promise<boolean>;
  listAddresses(dev: string): Promise<RawAddress[]>;
  addRoute(route: RawRouteSpec): Promise<void>;
  deleteRoute(route: RawRouteSpec): Promise<boolean>;
  listRoutes(family: 0 | 4 | 6, table: number): Promise<RawRoute[]>;
  /** The type of the route the kernel picks for ip (RTN_LOCAL = 2), 0 when none. */
  routeType(ip: string): Promise<number>;
  /** routeType on the calling thread (RTM_GETROUTE is answered without the rtnl lock, within the send). */
  routeTypeSync(ip: string): number;
  addNeighbor(dev: string, ip: string, mac: string, state: number): Promise<void>;
  listNeighbors(dev: string): Promise<RawNeighbor[]>;
  writeSysctl(path: string, value: string): Promise<void>;
  readSysctl(path: string): Promise<string>;
  close(): Promise<void>;
}

/** One step of a batch as the addon takes it (see steps.ts). */
export type RawStep =
  | { op: 'setLink'; name: string; change: { up?: boolean; mtu?: number; mac?: string; name?: string } }
  | { op: 'addAddress'; dev: string; cidr: string; noDad: boolean }
  | { op: 'addRoute'; route: RawRouteSpec }
  | { op: 'addNeighbor'; dev: string; ip: string; mac: string; state: number }
  | { op: 'writeSysctl'; path: string; value: string };

/** The addon's exports. */
export interface NetlinkAddon {
  NetlinkHandle: new (netnsPath?: string) => RawHandle;
  /** Runs the steps in order on one worker job, inside netnsPath's namespace ("" for the process's). */
  applySteps(netnsPath: string, steps: RawStep[]): Promise<void>;
  nud: { permanent: number; reachable: number; noarp: number };
  /**
   * A link/address/route change watch of the process's namespace on Node's loop: onChange() once per
   * burst of notifications (or lost ones); close() stops it.
   */
  AddressWatch: new (onChange: () => void) => { close(): void };
  /** The NS_GET_NSTYPE of a namespace file and the device and inode opened; only `errno` when it failed. */
  nsType(path: string): { errno: number; type?: number; dev?: number; ino?: number };
}

const ADDON = join('netlink-native', 'build', 'Release', 'cellium_netlink.node');
let loaded: NetlinkAddon | undefined;

/** The addon path, under the package root (src/lib/package-root.ts; the working directory when not inside it). */
export function addonPath(): string {
  return join(packageRoot() ?? process.cwd(), ADDON);
}

/** Loads the addon once; throws a clear Error when it has not been built. */
export function loadAddon(): NetlinkAddon {
  if (loaded) return loaded;
  const path = addonPath();
  if (!existsSync(path)) {
    throw new Error(`netlink-native addon not built (${path} missing): run npm run build`);
  }
  loaded = createRequire(import.meta.url)(path) as NetlinkAddon;
  return loaded;
}
