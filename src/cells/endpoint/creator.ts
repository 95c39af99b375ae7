/**
 * The EndpointCreator (Cilium's endpointcreator): builds an Endpoint from an EndpointChangeRequest.
 * The request is checked with ajv against the shape of Cilium's model, then semantically (IP
 * families, labels, initial state); every rejection is EndpointError('invalid') naming the field
 * as a JSON pointer.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { token } from '../../hive/token.js';
import { canonicalAddr } from '../../lib/addr.js';
import { parseLabel } from '../../lib/labels.js';
import { Endpoint } from './endpoint.js';
import { EndpointError, unusableAddress } from './errors.js';
import { whyNotEndpointAddress } from './address-use.js';
import { MAX_ENDPOINT_ID } from './id-allocator.js';
import type { EndpointChangeRequest } from './model.js';
import type { EndpointSpec } from './spec.js';
import type { CallContext } from './types.js';

/** Builds endpoints from change requests. */
export interface EndpointCreator {
  /** A new, not yet managed Endpoint (ID 0) in the request's initial state; throws EndpointError('invalid'). */
  newEndpointFromChangeModel(ctx: CallContext, req: EndpointChangeRequest): Promise<Endpoint>;
}

/** Token for the EndpointCreator. */
export const EndpointCreatorToken = token<EndpointCreator>('EndpointCreator');

const MAC = '^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$';
const IFNAME = { type: 'string', minLength: 1, maxLength: 15, pattern: '^[^\\s/:]+$' };
const OBJ = { type: 'object' };

/** The shape of an EndpointChangeRequest (Cilium's field names; unknown fields are ignored). */
export const changeRequestSchema = {
  type: 'object',
  required: ['interface-name'],
  properties: {
    id: { type: 'integer', minimum: 0, maximum: MAX_ENDPOINT_ID },
    'container-id': { type: 'string', minLength: 1, maxLength: 256 },
    'container-name': { type: 'string' },
    'container-interface-name': IFNAME,
    'interface-name': IFNAME,
    'interface-index': { type: 'integer', minimum: 0, maximum: 0xffffffff },
    mac: { type: 'string', pattern: MAC },
    'host-mac': { type: 'string', pattern: MAC },
    addressing: {
      type: 'object',
      properties: {
        ipv4: { type: 'string' },
        'ipv4-expiration-uuid': { type: 'string' },
        'ipv4-pool-name': { type: 'string' },
        ipv6: { type: 'string' },
        'ipv6-expiration-uuid': { type: 'string' },
        'ipv6-pool-name': { type: 'string' },
      },
    },
    'k8s-pod-name': { type: 'string', maxLength: 253, pattern: '^[^/]*$' },
    'k8s-namespace': { type: 'string', maxLength: 63, pattern: '^[^/]*$' },
    'k8s-uid': { type: 'string' },
    labels: { type: 'array', items: { type: 'string' } },
    state: { type: 'string' },
    'sync-build-endpoint': { type: 'boolean' },
    'netns-cookie': { type: 'string' },
    'datapath-configuration': OBJ,
    properties: OBJ,
    'policy-enabled': { type: 'boolean' },
    'datapath-map-id': { type: 'integer' },
    'disable-legacy-identifiers': { type: 'boolean' },
  },
} as const;

const validate = new Ajv({ allErrors: false, strict: false }).compile(changeRequestSchema);

/** The JSON pointer and message of an ajv error. */
function fieldOf(e: ErrorObject): { field: string; message: string } {
  const missing = e.keyword === 'required' ? `/${String((e.params as { missingProperty: string }).missingProperty)}` : '';
  const field = `${e.instancePath}${missing}` || '/';
  return { field, message: missing ? `${field} is required` : `${field} ${e.message ?? 'is invalid'}` };
}

/** Validates a change request and returns the endpoint spec it describes. */
export function specFromChangeRequest(req: EndpointChangeRequest): EndpointSpec {
  if (!validate(req as unknown)) {
    const { field, message } = fieldOf(validate.errors![0]!);
    throw new EndpointError('invalid', `invalid endpoint change request: ${message}`, field);
  }
  const a = req.addressing ?? {};
  const ip = (fam: 'ipv4' | 'ipv6'): string | undefined => {
    const raw = a[fam];
    if (raw === undefined || raw === '') return undefined;
    const c = canonicalAddr(raw);
    if (!c || c.includes(':') !== (fam === 'ipv6')) {
      throw new EndpointError('invalid', `invalid endpoint change request: "${raw}" is not an ${fam === 'ipv4' ? 'IPv4' : 'IPv6'} address`, `/addressing/${fam}`);
    }
    const why = whyNotEndpointAddress(c);
    if (why) throw unusableAddress(raw, fam, why);
    return c;
  };
  const ipv4 = ip('ipv4');
  const ipv6 = ip('ipv6');
  if (!ipv4 && !ipv6) throw new EndpointError('invalid', 'invalid endpoint change request: an endpoint needs an IPv4 or an IPv6 address', '/addressing');
  if (req['k8s-pod-name'] && !req['k8s-namespace']) {
    throw new EndpointError('invalid', 'invalid endpoint change request: k8s-pod-name needs k8s-namespace', '/k8s-namespace');
  }
  return {
    requestedId: req.id ? req.id : undefined,
    containerId: req['container-id'],
    containerName: req['container-name'],
    containerIfName: req['container-interface-name'],
    ifName: req['interface-name']!,
    ifIndex: req['interface-index'] ?? 0,
    mac: (req.mac ?? '').toLowerCase(),
    hostMac: (req['host-mac'] ?? '').toLowerCase(),
    ipv4,
    ipv6,
    ipv4ExpirationUUID: a['ipv4-expiration-uuid'] || undefined,
    ipv6ExpirationUUID: a['ipv6-expiration-uuid'] || undefined,
    ipv4PoolName: a['ipv4-pool-name'] || undefined,
    ipv6PoolName: a['ipv6-pool-name'] || undefined,
    podName: req['k8s-pod-name'] || undefined,
    namespace: req['k8s-namespace'] || undefined,
    k8sUid: req['k8s-uid'] || undefined,
    netnsCookie: req['netns-cookie'] || undefined,
    datapathConfiguration: req['datapath-configuration'],
    properties: req.properties,
    disableLegacyIdentifiers: req['disable-legacy-identifiers'],
  };
}

/** Checks every label of a request; returns them. */
export function labelsFromChangeRequest(req: EndpointChangeRequest): string[] {
  const labels = [...(req.labels ?? [])];
  labels.forEach((l, i) => {
    try {
      parseLabel(l);
    } catch (err) {
      throw new EndpointError('invalid', `invalid endpoint change request: ${(err as Error).message}`, `/labels/${i}`);
    }
  });
  return labels;
}

/** The default EndpointCreator. */
export class DefaultEndpointCreator implements EndpointCreator {
  /** See EndpointCreator. */
  async newEndpointFromChangeModel(ctx: CallContext, req: EndpointChangeRequest): Promise<Endpoint> {
    ctx.signal?.throwIfAborted();
    if (req === null || typeof req !== 'object' || Array.isArray(req)) {
      throw new EndpointError('invalid', 'invalid endpoint change request: expected an object', '/');
    }
    const spec = specFromChangeRequest(req);
    const labels = labelsFromChangeRequest(req);
    const state = req.state ?? 'waiting-for-identity';
    if (state !== 'waiting-for-identity' && state !== 'restoring') {
      throw new EndpointError('invalid', `invalid endpoint change request: a new endpoint starts in waiting-for-identity or restoring, not ${JSON.stringify(state)}`, '/state');
    }
    const ep = new Endpoint(spec, labels);
    ep.setState(state, 'Endpoint creation');
    return ep;
  }
}
