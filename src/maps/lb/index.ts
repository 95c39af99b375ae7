/** The load-balancing maps (bpf/lib/lb.h): layouts, specs and the pinned maps as an LBMapSet; bpf_sock's reverse-socket maps. */
export * from './layout.js';
export { KernelLBMap, openLBMaps, openPinnedLBMaps, type KernelLBMaps } from './maps.js';
export { REVERSE_SK_MAP_NAMES, REVERSE_SK_SIZES, reverseSkMapSpecs, openReverseSkMaps, reverseSkEntries, type ReverseSkEntry } from './reverse-sk.js';
