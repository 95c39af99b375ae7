/**
 * The per-endpoint program bpf_lxc: its constants, loading and attaching it to an endpoint's
 * interface (tcx or legacy tc), telling whose program an attached one is, and running it on
 * crafted packets (kernelVerdict).
 */
export {
  LXC_PROGRAMS, endpointIdConstant, lxcConstants, lxcLinkPath, loadEndpointProgram, loadLxcObject, unloadEndpointProgram, endpointPrograms, pinnedEndpoints,
  type LxcLoadOptions, type LxcLoadResult, type LxcUnloadOptions,
} from './lxc.js';
export { kernelVerdict } from './kernel-verdict.js';
export { isEndpointLoaded, isEndpointProgram, programConstants, programMapIds } from './lxc-state.js';
