/**
 * The policy map's C layout (bpf/lib/common.h struct policy_key / policy_value) as codecs, and its
 * definition (bpf/lib/maps.h cellium_policy) as a spec.
 */
import { MapFlags, MapType, type MapSpec } from '../../bpf/bpf-map.js';
import type { Codec } from '../../bpf/typed-map.js';
import {
  POLICY_KEY_SIZE, POLICY_VALUE_SIZE, decodePolicyKey, decodePolicyValue, encodePolicyKey, encodePolicyValue, type PolicyKey,
} from './key.js';

/** struct policy_key (see key.ts). */
export const policyKeyCodec: Codec<PolicyKey> = {
  size: POLICY_KEY_SIZE,
  encode: (k, b, o) => void encodePolicyKey(k, b, o),
  decode: (b, o) => decodePolicyKey(b, o),
};

/** struct policy_value: the deny flag. */
export const policyValueCodec: Codec<boolean> = {
  size: POLICY_VALUE_SIZE,
  encode: (deny, b, o) => void encodePolicyValue(deny, b, o),
  decode: (b, o) => decodePolicyValue(b, o),
};

/** Name of the per-endpoint policy map inside bpf_lxc.o (bound to cellium_policy_<id> at load). */
export const OBJECT_POLICY_MAP = 'cellium_policy';

/** cellium_policy_<id> (bpf/lib/maps.h cellium_policy). */
export const POLICY_MAP_SPEC: MapSpec = { name: OBJECT_POLICY_MAP, type: MapType.LPM_TRIE, keySize: POLICY_KEY_SIZE, valueSize: POLICY_VALUE_SIZE, maxEntries: 16384, flags: MapFlags.NO_PREALLOC };
