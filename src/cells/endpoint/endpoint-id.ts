/**
 * Cilium's endpoint identifiers: a bare number or `cilium-local:N`, and the prefixed forms
 * `container-id:`, `container-name:`, `pod-name:ns/name`, `cni-attachment-id:<container-id>:<ifname>`,
 * `ipv4:`, `ipv6:` (pkg/endpoint/id).
 */
import { canonicalAddr } from '../../lib/addr.js';
import { EndpointError } from './errors.js';
import { MAX_ENDPOINT_ID } from './id-allocator.js';

/** The prefixes we resolve. */
export type EndpointIdPrefix = 'cilium-local' | 'container-id' | 'container-name' | 'pod-name' | 'cni-attachment-id' | 'ipv4' | 'ipv6';

/** A parsed endpoint identifier. */
export interface ParsedEndpointId {
  readonly prefix: EndpointIdPrefix;
  readonly value: string;
}

const PREFIXES: readonly EndpointIdPrefix[] = ['cilium-local', 'container-id', 'container-name', 'pod-name', 'cni-attachment-id', 'ipv4', 'ipv6'];
const UNSUPPORTED = ['cilium-global', 'docker-endpoint'];

/** Parses an endpoint identifier; throws EndpointError('invalid') saying what is wrong. */
export function parseEndpointId(raw: string): ParsedEndpointId {
  const s = String(raw).trim();
  const colon = s.indexOf(':');
  const prefix = colon < 0 ? 'cilium-local' : s.slice(0, colon);
  const value = colon < 0 ? s : s.slice(colon + 1);
  if (UNSUPPORTED.includes(prefix)) throw new EndpointError('invalid', `unsupported endpoint ID prefix "${prefix}"`);
  if (!(PREFIXES as readonly string[]).includes(prefix)) {
    throw new EndpointError('invalid', `unknown endpoint ID prefix "${prefix}" in "${s}": use a number or one of ${PREFIXES.map((p) => `${p}:`).join(', ')}`);
  }
  if (value === '') throw new EndpointError('invalid', `empty endpoint ID after "${prefix}:"`);
  const p = prefix as EndpointIdPrefix;
  switch (p) {
    case 'cilium-local':
      if (!/^\d+$/.test(value) || Number(value) > MAX_ENDPOINT_ID) {
        throw new EndpointError('invalid', `invalid endpoint ID "${value}": expected an integer 1..${MAX_ENDPOINT_ID}`);
      }
      return { prefix: p, value: String(Number(value)) };
    case 'ipv4':
    case 'ipv6': {
      const ip = canonicalAddr(value);
      if (!ip || (p === 'ipv4') !== !ip.includes(':')) throw new EndpointError('invalid', `invalid ${p} address "${value}"`);
      return { prefix: p, value: ip };
    }
    case 'pod-name':
      if (!/^[^/]+\/[^/]+$/.test(value)) throw new EndpointError('invalid', `invalid pod name "${value}": expected namespace/name`);
      return { prefix: p, value };
    default:
      return { prefix: p, value };
  }
}
