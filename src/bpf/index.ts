/**
 * The BPF layer over bpf-loader-native: availability, errors, raw and typed maps, BPF objects,
 * tc/tcx attachment, bpffs, the datapath maps and the per-endpoint program bpf_lxc.
 */
export { bpfAvailable, addonPath, objectPath, type BpfAvailability } from './native.js';
export { BpfError, errnoName, hintFor } from './errors.js';
export { BpfMap, MapType, MapFlags, UpdateFlags, isBatchUnsupported, type MapSpec } from './bpf-map.js';
export { TypedMap, type Codec } from './typed-map.js';
export * from './layout.js';
export { BpfObject, type OpenOptions } from './object.js';
export { attachTc, detachTc, attachedPrograms, closeFd, type TcHook, type AttachMode, type TcTarget, type TcAttachment } from './attach.js';
export { ensureBpffs, isBpffs, DEFAULT_BPF_ROOT, BPFFS_MOUNT } from './bpffs.js';
export {
  openIPCacheMap, openLxcMap, openPolicyMap, removePolicyMap, policyMapPath, syncPolicyMap, readDropCounters, readTraffic,
  type TrafficCounter, type TrafficCounters,
  type IPCacheMap, type LxcMap, type PolicyMap, type PolicySyncResult,
} from './cellium-maps.js';
export * from './ct-layout.js';
export {
  CtMaps, flushCtMaps, layoutText, openExact, sweepAddresses, sweepExpired, sweepMap,
  type CtMap, type MapReplacement, type SweepOptions, type SweepResult,
} from './ct-maps.js';
export {
  LXC_PROGRAMS, endpointIdConstant, lxcConstants, lxcLinkPath, loadEndpointProgram, loadLxcObject, unloadEndpointProgram, endpointPrograms, pinnedEndpoints,
  type LxcLoadOptions, type LxcLoadResult, type LxcUnloadOptions,
} from './lxc.js';
export { kernelVerdict } from './kernel-verdict.js';
export { isEndpointLoaded, isEndpointProgram, programConstants, programMapIds } from './lxc-state.js';
