/** Human rendering of endpoints: Cilium's `endpoint list` columns, and one endpoint in detail. */
import type { Endpoint, components } from '../../api/models.js';
import { keyValues, table, type Cell } from '../output.js';

type PolicyEnabled = components['schemas']['EndpointPolicyEnabled'];

/** `Enabled` / `Disabled` (with ` (audit)`) for one direction of an endpoint's enforcement. */
export function enforcement(mode: PolicyEnabled | undefined, direction: 'ingress' | 'egress'): string {
  if (!mode) return 'Unknown';
  const on = mode === 'both' || mode === direction || mode === 'audit-both' || mode === `audit-${direction}`;
  return on ? (mode.startsWith('audit') ? 'Enabled (audit)' : 'Enabled') : 'Disabled';
}

const realized = (ep: Endpoint) => ep.status.policy?.realized;

/** The identity labels of an endpoint (security-relevant ones when there is no identity yet). */
function labelsOf(ep: Endpoint): string[] {
  return [...(ep.status.identity?.labels ?? ep.status.labels?.['security-relevant'] ?? [])].sort();
}

/** The endpoint list table. */
export function renderEndpointList(eps: readonly Endpoint[]): string {
  const rows: Cell[][] = [...eps]
    .sort((a, b) => a.id - b.id)
    .map((ep) => {
      const addr = ep.status.networking?.addressing ?? [];
      return [
        ep.id,
        enforcement(realized(ep)?.['policy-enabled'], 'ingress'),
        enforcement(realized(ep)?.['policy-enabled'], 'egress'),
        ep.status.identity?.id ?? '',
        labelsOf(ep),
        addr.map((a) => a.ipv6).filter((x): x is string => !!x),
        addr.map((a) => a.ipv4).filter((x): x is string => !!x),
        ep.status.state,
      ];
    });
  return table(
    ['Endpoint', 'Policy (ingress) enforcement', 'Policy (egress) enforcement', 'Identity', 'Labels (source:key[=value])', 'IPv6', 'IPv4', 'Status'],
    rows,
  );
}

/** One endpoint in detail. */
export function renderEndpoint(ep: Endpoint): string {
  const st = ep.status;
  const net = st.networking;
  const ids = st['external-identifiers'];
  const pol = realized(ep);
  const list = (xs?: readonly number[]) => (xs === undefined ? undefined : xs.length ? xs.join(', ') : '(none)');
  return keyValues([
    ['Endpoint', ep.id],
    ['State', st.state],
    ['Identity', st.identity ? `${st.identity.id}` : undefined],
    ['Labels', labelsOf(ep)],
    ['IPv4', net?.addressing?.map((a) => a.ipv4).filter((x): x is string => !!x)],
    ['IPv6', net?.addressing?.map((a) => a.ipv6).filter((x): x is string => !!x)],
    ['Interface', net?.['interface-name'] ? `${net['interface-name']}${net['interface-index'] !== undefined ? ` (index ${net['interface-index']})` : ''}` : undefined],
    ['Container interface', net?.['container-interface-name']],
    ['MAC', net?.mac],
    ['Host MAC', net?.['host-mac']],
    ['Container', ids?.['container-id']],
    ['Pod', ids?.['pod-name'] ?? (ids?.['k8s-namespace'] && ids?.['k8s-pod-name'] ? `${ids['k8s-namespace']}/${ids['k8s-pod-name']}` : undefined)],
    ['Policy revision', pol?.['policy-revision']],
    ['Ingress enforcement', pol ? enforcement(pol['policy-enabled'], 'ingress') : undefined],
    ['Egress enforcement', pol ? enforcement(pol['policy-enabled'], 'egress') : undefined],
    ['Allowed ingress', list(pol?.['allowed-ingress-identities'])],
    ['Allowed egress', list(pol?.['allowed-egress-identities'])],
    ['Health', st.health ? `${st.health.overallHealth ?? 'Unknown'} (bpf ${st.health.bpf ?? '?'}, policy ${st.health.policy ?? '?'})` : undefined],
    ['Controllers', st.controllers ? `${st.controllers.length}` : undefined],
  ]);
}
