/**
 * JSON schemas (ajv) of the CiliumNetworkPolicy subset Cellium supports: endpointSelector,
 * ingress/egress (+Deny) with from/toEndpoints, from/toEntities, from/toCIDR, from/toCIDRSet and toPorts
 * (port, endPort, protocol), rule labels, enableDefaultDeny. Unknown fields are rejected by name.
 */
import { ENTITY_NAMES } from './entities.js';

/** Protocols accepted in toPorts. */
export const PROTOCOLS = ['TCP', 'UDP', 'SCTP', 'ICMP', 'ANY'] as const;

/** JSON schema of a Kubernetes LabelSelector (matchLabels, matchExpressions), shared with policy-k8s. */
export const labelSelector = {
  type: 'object',
  additionalProperties: false,
  properties: {
    matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
    matchExpressions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'operator'],
        properties: {
          key: { type: 'string', minLength: 1 },
          operator: { enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] },
          values: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
};

const portProtocol = {
  type: 'object',
  additionalProperties: false,
  required: ['port'],
  properties: {
    port: {
      anyOf: [
        { type: 'string', pattern: '^[0-9]{1,5}$' },
        // a named port (Kubernetes IANA_SVC_NAME): on ingress the selected endpoint's own, on egress the peers' (named-port map)
        { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 15 },
        { type: 'integer', minimum: 0, maximum: 65535 },
      ],
    },
    endPort: { type: 'integer', minimum: 0, maximum: 65535 },
    protocol: { enum: [...PROTOCOLS] },
  },
};

const portRule = {
  type: 'object',
  additionalProperties: false,
  properties: { ports: { type: 'array', items: portProtocol } },
};

const cidr = { type: 'string', minLength: 1 };

/** A CIDR with exceptions (Cilium's CIDRRule: `cidr` and `except`). */
const cidrRule = {
  type: 'object',
  additionalProperties: false,
  required: ['cidr'],
  properties: { cidr, except: { type: 'array', items: cidr } },
};

function peerRule(dir: 'from' | 'to'): object {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      [`${dir}Endpoints`]: { type: 'array', items: labelSelector },
      [`${dir}Entities`]: { type: 'array', items: { enum: [...ENTITY_NAMES] } },
      [`${dir}CIDR`]: { type: 'array', items: cidr },
      [`${dir}CIDRSet`]: { type: 'array', items: cidrRule },
      toPorts: { type: 'array', items: portRule },
    },
  };
}

const ruleLabel = {
  anyOf: [
    { type: 'string', minLength: 1 },
    {
      type: 'object',
      additionalProperties: false,
      required: ['key'],
      properties: { key: { type: 'string', minLength: 1 }, value: { type: 'string' }, source: { type: 'string' } },
    },
  ],
};

/** Schema of one rule (a CNP `spec`). */
export const ruleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['endpointSelector'],
  properties: {
    endpointSelector: labelSelector,
    ingress: { type: 'array', items: peerRule('from') },
    ingressDeny: { type: 'array', items: peerRule('from') },
    egress: { type: 'array', items: peerRule('to') },
    egressDeny: { type: 'array', items: peerRule('to') },
    labels: { type: 'array', items: ruleLabel },
    description: { type: 'string' },
    enableDefaultDeny: {
      type: 'object',
      additionalProperties: false,
      properties: { ingress: { type: 'boolean' }, egress: { type: 'boolean' } },
    },
  },
};

/** Schema of a CiliumNetworkPolicy or CiliumClusterwideNetworkPolicy resource. */
export const resourceSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata'],
  additionalProperties: false,
  properties: {
    apiVersion: { const: 'cilium.io/v2' },
    kind: { enum: ['CiliumNetworkPolicy', 'CiliumClusterwideNetworkPolicy'] },
    metadata: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1 },
        namespace: { type: 'string', minLength: 1 },
        uid: { type: 'string' },
      },
    },
    spec: ruleSchema,
    specs: { type: 'array', items: ruleSchema },
    status: { type: 'object' },
  },
};

/** What each ajv keyword failure should tell the user to do. */
export const SUPPORTED_HINT: Readonly<Record<string, string>> = {
  ingress: 'fromEndpoints, fromEntities, fromCIDR, fromCIDRSet, toPorts',
  ingressDeny: 'fromEndpoints, fromEntities, fromCIDR, fromCIDRSet, toPorts',
  egress: 'toEndpoints, toEntities, toCIDR, toCIDRSet, toPorts',
  egressDeny: 'toEndpoints, toEntities, toCIDR, toCIDRSet, toPorts',
};
