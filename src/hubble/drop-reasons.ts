/**
 * The datapath's drop reasons (bpf/lib/common.h, named in src/maps/metrics) as Hubble numbers
 * them (flow.DropReason: Cilium's DROP_* codes, negated in its datapath).
 */
import { DropReason } from './gen/flow/flow.js';

/** Cellium reason name → Hubble's DropReason. */
export const HUBBLE_DROP_REASONS: Readonly<Record<string, DropReason>> = {
  policy: DropReason.POLICY_DENIED,
  'policy-deny': DropReason.POLICY_DENY,
  invalid: DropReason.INVALID_PACKET_DROPPED,
  'unsupported-l3': DropReason.UNSUPPORTED_L3_PROTOCOL,
  'ct-insert-failed': DropReason.CT_MAP_INSERTION_FAILED,
  // a port a service address does not have, and a service without backends: Cilium reports
  // both as DROP_NO_SERVICE (158, "Service backend not found")
  'no-service': DropReason.SERVICE_BACKEND_NOT_FOUND,
  'no-backend': DropReason.SERVICE_BACKEND_NOT_FOUND,
  'invalid-source': DropReason.INVALID_SOURCE_IP,
};

/** Hubble's DropReason of a Cellium reason name (DROP_REASON_UNKNOWN for reasons it has no number for). */
export function hubbleDropReason(reason: string): DropReason {
  return HUBBLE_DROP_REASONS[reason] ?? DropReason.DROP_REASON_UNKNOWN;
}
