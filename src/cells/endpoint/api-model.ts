/**
 * The Endpoint as Cilium's API shows it (the Endpoint model: spec, status with identity, labels,
 * networking, policy, controllers, log, health, external identifiers).
 */
import type { Endpoint, EndpointPolicyStatus } from './endpoint.js';
import type { EndpointModel } from './model.js';

/** Protocol names of named ports in the model (Cilium's Port.protocol). */
const PROTOCOL_NAMES: Readonly<Record<number, string>> = { 6: 'TCP', 17: 'UDP', 132: 'SCTP' };

/** Cilium's Endpoint model of an endpoint. */
export function endpointModel(ep: Endpoint): EndpointModel {
  const s = ep.spec;
  const identityLabels = ep.securityIdentity ? [...ep.securityIdentity.labels] : [];
  return {
    id: ep.id,
    spec: { 'label-configuration': { user: [...ep.customLabels] }, options: { ...ep.options } },
    status: {
      state: ep.state,
      identity: ep.securityIdentity ? { id: ep.securityIdentity.id, labels: identityLabels } : undefined,
      labels: {
        realized: { user: [...ep.customLabels] },
        'security-relevant': identityLabels,
        derived: [...ep.originLabels],
        disabled: [],
      },
      networking: {
        addressing: [
          {
            ...(s.ipv4 ? { ipv4: s.ipv4 } : {}),
            ...(s.ipv4PoolName ? { 'ipv4-pool-name': s.ipv4PoolName } : {}),
            ...(s.ipv6 ? { ipv6: s.ipv6 } : {}),
            ...(s.ipv6PoolName ? { 'ipv6-pool-name': s.ipv6PoolName } : {}),
          },
        ],
        'interface-name': s.ifName,
        'interface-index': s.ifIndex,
        // Unknown MACs are left out, as Cilium's omitempty does (an empty string is not a MAC).
        ...(s.mac ? { mac: s.mac } : {}),
        ...(s.hostMac ? { 'host-mac': s.hostMac } : {}),
        'container-interface-name': s.containerIfName,
      },
      policy: {
        realized: policyModel(ep.realizedPolicy),
        spec: policyModel(ep.desiredPolicy),
        'proxy-statistics': [],
      },
      controllers: [...ep.controllers()],
      log: ep.log(),
      health: ep.health(),
      'external-identifiers': {
        'container-id': s.containerId,
        'container-name': s.containerName,
        'cni-attachment-id': ep.cniAttachmentId,
        'pod-name': ep.podName,
        'k8s-pod-name': s.podName,
        'k8s-namespace': s.namespace,
      },
      namedPorts: ep.namedPorts.map((p) => ({ name: p.name, port: p.port, protocol: PROTOCOL_NAMES[p.protocol] ?? 'ANY' })),
    },
  };
}

/** Cilium's EndpointPolicy for a policy status. */
function policyModel(p: EndpointPolicyStatus | undefined): Record<string, unknown> {
  if (!p) return { 'policy-enabled': 'none', 'allowed-ingress-identities': [], 'allowed-egress-identities': [], 'denied-ingress-identities': [], 'denied-egress-identities': [] };
  const enabled = p.ingressEnforced && p.egressEnforced ? 'both' : p.ingressEnforced ? 'ingress' : p.egressEnforced ? 'egress' : 'none';
  return {
    'policy-revision': p.revision,
    id: p.identity,
    'policy-enabled': enabled,
    'allowed-ingress-identities': [...p.allowedIngressIdentities],
    'allowed-egress-identities': [...p.allowedEgressIdentities],
    'denied-ingress-identities': [...p.deniedIngressIdentities],
    'denied-egress-identities': [...p.deniedEgressIdentities],
  };
}
