/** The endpoints map (cellium_lxc: IP -> local endpoint): layout and open. */
export * from './layout.js';
export { openLxcMap, type LxcMap } from './map.js';
