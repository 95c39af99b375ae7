/** The ipcache map (cellium_ipcache: CIDR -> identity): layout and open. */
export * from './layout.js';
export { openIPCacheMap, type IPCacheMap } from './map.js';
