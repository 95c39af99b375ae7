/**
 * Where the loadbalancer cell reads the node's own addresses from: rtnetlink (every address of every
 * interface and every local route of the agent's network namespace, one socket kept open, and an
 * rtnetlink watch for changes), or, where the netlink addon is not built (a package installed
 * without a compiler: control plane and memory datapath only), Node's interface list polled every
 * NODE_ADDRESS_POLL_MS (addresses only: local routes need rtnetlink).
 */
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { addonPath, Netlink, watchAddresses } from '../../netlink/index.js';
import type { InterfaceAddress, LocalRoute } from './node-addrs.js';

/** How often the addresses are polled without the netlink addon. */
export const NODE_ADDRESS_POLL_MS = 1000;

/** RTN_LOCAL: a route of the local table whose addresses are the node's. */
const RTN_LOCAL = 2;
/** The local routing table. */
const RT_TABLE_LOCAL = 255;

/** Notifications of address changes; `polled` says how when they are polled rather than watched. */
export interface AddressChanges {
  readonly polled?: string;
  close(): void;
}

/** Lists the node's addresses (and local routes where rtnetlink is there) and reports changes. */
export interface InterfaceLister {
  readonly list: () => Promise<InterfaceAddress[]>;
  readonly localRoutes?: () => Promise<LocalRoute[]>;
  /** Calls onChange after a change (at once over rtnetlink; within NODE_ADDRESS_POLL_MS when polled). */
  watch(onChange: () => void): AddressChanges;
  close(): Promise<void>;
}

/** The rtnetlink lister where the netlink addon is built, else the polled one. */
export function interfaceLister(): InterfaceLister {
  return existsSync(addonPath()) ? netlinkLister() : polledLister();
}

function netlinkLister(): InterfaceLister {
  let nl: Netlink | undefined;
  let closed = false;
  const open = async (): Promise<{ nl: Netlink; dev: (index: number) => string }> => {
    if (closed) throw new Error('the agent is stopping: the node\'s addresses are no longer listed');
    nl ??= Netlink.open();
    const names = new Map((await nl.listLinks()).map((l) => [l.index, l.name]));
    return { nl, dev: (i) => names.get(i) ?? `#${i}` };
  };
  return {
    list: async () => {
      const { nl, dev } = await open();
      return (await nl.listAddresses()).map((a) => ({ ip: a.address, dev: dev(a.index) }));
    },
    localRoutes: async () => {
      const { nl, dev } = await open();
      return (await nl.listRoutes({ table: RT_TABLE_LOCAL })).filter((r) => r.type === RTN_LOCAL).map((r) => ({ cidr: r.dst, dev: dev(r.ifindex) }));
    },
    watch: (onChange) => {
      const w = watchAddresses(onChange);
      return { close: () => w.close() };
    },
    close: async () => {
      closed = true;
      const n = nl;
      nl = undefined;
      await n?.close();
    },
  };
}

/** Every address of every interface, from Node's interface list (the kernel's, read anew each call). */
function listNow(): InterfaceAddress[] {
  return Object.entries(networkInterfaces()).flatMap(([dev, addrs]) => (addrs ?? []).map((a) => ({ ip: a.address, dev })));
}

/** The lister without the netlink addon: Node's interface list, polled for changes. */
export function polledLister(): InterfaceLister {
  return {
    list: () => Promise.resolve(listNow()),
    watch: (onChange) => {
      let last = JSON.stringify(listNow());
      const timer = setInterval(() => {
        const now = JSON.stringify(listNow());
        if (now === last) return;
        last = now;
        onChange();
      }, NODE_ADDRESS_POLL_MS);
      timer.unref();
      return { polled: `every ${NODE_ADDRESS_POLL_MS} ms, no local routes`, close: () => clearInterval(timer) };
    },
    close: () => Promise.resolve(),
  };
}
