/** The load-balancing maps (bpf/lib/lb.h): layouts, specs and the pinned maps as an LBMapSet. */
export * from './layout.js';
export { KernelLBMap, openLBMaps, openPinnedLBMaps, type KernelLBMaps } from './maps.js';
