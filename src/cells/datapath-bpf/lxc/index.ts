/**
 * The per-endpoint program bpf_lxc: its constants, loading and attaching it to an endpoint's
 * interface (tcx or legacy tc), telling whose program an attached one is, and running it on
 * crafted packets (kernelVerdict).
 */
export {
  LXC_PROGRAMS, endpointIdConstant, ctConstants, lxcConstants, lxcBuildId, lxcLinkPath, loadEndpointProgram, loadLxcObject, unloadEndpointProgram, endpointPrograms, pinnedEndpoints,
  type LxcLoadOptions, type LxcLoadResult, type LxcUnloadOptions,
} from './lxc.js';
export {
  sharedConstants, endpointInfo, loadSharedProgram, sharedProgramPath, pinSharedProgram, openPinnedShared, unpinSharedProgram, writeSharedEndpoint,
  attachShared, loadSharedForEndpoint, unloadSharedEndpoint, type SharedProgram, type SharedLoadOptions, type SharedAttachOptions,
} from './shared.js';
export { kernelVerdict } from './kernel-verdict.js';
export { isEndpointLoaded, isEndpointProgram, programConstants, programMapIds } from './lxc-state.js';
