/**
 * JSON schema (ajv) of a networking.k8s.io/v1 NetworkPolicy, the fields the translation reads;
 * unknown fields of the spec are rejected by name (nothing is silently ignored).
 */
import { labelSelectorSchema as labelSelector } from '../policy/index.js';

const peer = {
  type: 'object',
  additionalProperties: false,
  properties: {
    podSelector: labelSelector,
    namespaceSelector: labelSelector,
    ipBlock: {
      type: 'object',
      additionalProperties: false,
      required: ['cidr'],
      properties: { cidr: { type: 'string', minLength: 1 }, except: { type: 'array', items: { type: 'string', minLength: 1 } } },
    },
  },
};

const port = {
  type: 'object',
  additionalProperties: false,
  properties: {
    protocol: { enum: ['TCP', 'UDP', 'SCTP'] },
    port: { type: ['integer', 'string'], minimum: 1, maximum: 65535, minLength: 1, maxLength: 15 },
    endPort: { type: 'integer', minimum: 1, maximum: 65535 },
  },
};

const rule = (dir: 'from' | 'to') => ({
  type: 'object',
  additionalProperties: false,
  properties: { [dir]: { type: 'array', items: peer }, ports: { type: 'array', items: port } },
});

/** Schema of a NetworkPolicy object. */
export const networkPolicySchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'networking.k8s.io/v1' },
    kind: { const: 'NetworkPolicy' },
    metadata: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1 }, namespace: { type: 'string', minLength: 1 }, uid: { type: 'string' } },
    },
    spec: {
      type: 'object',
      additionalProperties: false,
      required: ['podSelector'],
      properties: {
        podSelector: labelSelector,
        ingress: { type: 'array', items: rule('from') },
        egress: { type: 'array', items: rule('to') },
        policyTypes: { type: 'array', items: { enum: ['Ingress', 'Egress'] } },
      },
    },
  },
};
