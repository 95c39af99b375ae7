/**
 * The BPF layer over bpf-loader-native: availability, errors, raw and typed maps, BPF objects,
 * tc/tcx attachment, cgroup links, bpffs (generic: Cellium's maps are in src/maps, bpf_lxc's loader in the
 * datapath-bpf cell).
 */
export { bpfAvailable, addonPath, objectPath, type BpfAvailability } from './native.js';
export { BpfError, errnoName, hintFor } from './errors.js';
export { BpfMap, MapType, MapFlags, UpdateFlags, isBatchUnsupported, type MapSpec } from './bpf-map.js';
export { TypedMap, type Codec } from './typed-map.js';
export { hostOrder } from './host-order.js';
export { BpfObject, type OpenOptions } from './object.js';
export { attachTc, detachTc, attachedPrograms, programAttached, tcxPrograms, closeFd, type TcHook, type AttachMode, type TcTarget, type TcAttachment } from './attach.js';
export { attachCgroup, detachCgroup, cgroupPrograms, pinnedCgroupLink, cgroupV2Mount, cgroupV2Problem, cgroupId, CgroupAttachType, type CgroupHook, type CgroupTarget, type CgroupAttachment } from './cgroup.js';
export { ensureBpffs, isBpffs, DEFAULT_BPF_ROOT, BPFFS_MOUNT } from './bpffs.js';
