/**
 * Drop reasons as explain tells them: Cilium's number and Hubble's name (flow.DropReason), the
 * kind of decision, what it means and, for the reasons no policy can fix, what to do.
 */
import { flowpb } from '../../hubble/index.js';
import type { DropKind, DropReasonInfo } from './types.js';

type Entry = readonly [DropKind, string, string?];

/** The reasons explain knows more about than their name (the ones Cellium's datapath reports first). */
const KNOWN: Readonly<Record<string, Entry>> = {
  POLICY_DENIED: ['policy', 'no policy rule allowed the flow: a direction that is enforced (some rule selects the endpoint there) drops what no rule allows (default deny)'],
  POLICY_DENY: ['policy', 'a deny rule (ingressDeny/egressDeny) matched the flow; a deny wins over every allow'],
  SERVICE_BACKEND_NOT_FOUND: ['service', 'the destination is a service frontend that had no backend to send the flow to (Cilium\'s DROP_NO_SERVICE: a service without ready endpoints, or a port the service address does not have)',
    'give the service ready backends (pods matching its selector, EndpointSlices with ready endpoints), or send to a port the service has; cellium service list shows its frontends and backends'],
  INVALID_SOURCE_IP: ['source', 'the packet left a pod with a source address that is not the pod\'s own (Cilium\'s source check, DROP_INVALID_SIP): the datapath judges a packet by the identity of its source address, so a pod may not send from another\'s',
    'send from the pod\'s own address (cellium endpoint get ID shows it); a pod that must use another address needs it assigned to its endpoint'],
  INVALID_SOURCE_MAC: ['source', 'the packet\'s source MAC address is not the endpoint\'s', 'send from the interface Cellium set up; do not change the pod\'s MAC address'],
  INVALID_PACKET_DROPPED: ['packet', 'the packet could not be parsed (truncated or malformed headers)', 'find the sender of malformed packets (the flow\'s source)'],
  UNSUPPORTED_L3_PROTOCOL: ['packet', 'the packet is neither IPv4 nor IPv6 (nor ARP), which the datapath does not forward', 'send IPv4 or IPv6'],
  CT_MAP_INSERTION_FAILED: ['conntrack', 'the connection could not be added to the conntrack map (full, and nothing could be evicted)',
    'raise --bpf-ct-global-tcp-max / --bpf-ct-global-any-max, or find what opens so many connections (cellium bpf ct list global; docs/datapath.md, conntrack pressure)'],
  CT_TRUNCATED_OR_INVALID_HEADER: ['conntrack', 'conntrack could not read the packet\'s L4 header'],
  CT_MISSING_TCP_ACK_FLAG: ['conntrack', 'a TCP packet of an established connection came without ACK'],
  CT_UNKNOWN_L4_PROTOCOL: ['conntrack', 'conntrack does not know the packet\'s L4 protocol'],
  CT_CANNOT_CREATE_ENTRY_FROM_PACKET: ['conntrack', 'the packet cannot start a connection (e.g. a TCP packet without SYN for an unknown connection)',
    'the connection was likely forgotten (conntrack entry expired or flushed): the client must reconnect'],
  CT_NO_MAP_FOUND: ['conntrack', 'no conntrack map for the packet\'s family'],
  UNKNOWN_CONNECTION_TRACKING_STATE: ['conntrack', 'conntrack returned a state the datapath does not handle'],
  STALE_OR_UNROUTABLE_IP: ['other', 'the address is stale or cannot be routed'],
  NO_MATCHING_LOCAL_CONTAINER_FOUND: ['other', 'the destination address is in the node\'s pod range but no local endpoint has it', 'check cellium endpoint list: the pod may be gone'],
  DENIED_BY_LB_SRC_RANGE_CHECK: ['other', 'the service\'s loadBalancerSourceRanges do not include the source', 'add the source\'s range to the service\'s loadBalancerSourceRanges'],
  AUTH_REQUIRED: ['other', 'a rule requires mutual authentication, which was not done'],
  DROP_EP_NOT_READY: ['other', 'the endpoint is not ready (its policy is not in place yet)', 'wait for the endpoint to be ready (cellium endpoint list)'],
  DROP_HOST_NOT_READY: ['other', 'the host endpoint is not ready'],
  TTL_EXCEEDED: ['packet', 'the packet\'s TTL ran out'],
  IP_FRAGMENTATION_NOT_SUPPORTED: ['packet', 'fragmented IP packets are not supported'],
  UNKNOWN_L4_PROTOCOL: ['packet', 'the datapath does not know the packet\'s L4 protocol'],
};

/** The explanation of Hubble drop reason `code` (a number nobody knows is named `reason-N`). */
export function dropReasonInfo(code: number): DropReasonInfo {
  const name = (flowpb.DropReason as unknown as Record<number, string | undefined>)[code] ?? `reason-${code}`;
  const known = KNOWN[name];
  if (known) return { code, name, kind: known[0], meaning: known[1], ...(known[2] ? { fix: known[2] } : {}) };
  return { code, name, kind: 'other', meaning: `Cilium's drop reason ${name} (${code}); Cellium knows no more about it than its name` };
}
