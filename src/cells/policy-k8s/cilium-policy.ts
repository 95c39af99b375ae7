/**
 * CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy objects -> Cellium rules, through the
 * policy cell's own validator and compiler: every spec is checked before anything is returned (an
 * invalid rule rejects the whole object, naming the field), a CNP's namespace is written into its
 * endpointSelector and into peer selectors that name none (as Cilium scopes them), a CCNP stays
 * cluster-wide; every rule carries the object's origin labels.
 */
import { compileRule, parsePolicyText } from '../policy/index.js';
import { invalidObject, wrongKind } from './errors.js';
import { originLabels } from './network-policy.js';
import type { Translation } from './types.js';

type Kind = 'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy';

function translate(obj: unknown, kind: Kind): Translation {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw invalidObject('', `expected an object, got ${JSON.stringify(obj)}`, `give a ${kind} object`);
  const o = obj as { kind?: unknown; metadata?: { name?: string; namespace?: string; uid?: string } };
  if (o.kind !== kind) throw wrongKind(o.kind, kind);
  if (kind === 'CiliumClusterwideNetworkPolicy' && o.metadata?.namespace) {
    throw invalidObject('/metadata/namespace', 'a clusterwide policy has no namespace', 'drop metadata.namespace, or make it a CiliumNetworkPolicy');
  }
  // parse + compile every spec first: any error rejects the whole object
  const compiled = parsePolicyText(JSON.stringify(obj)).map((input, i) => compileRule(input, i + 1));
  const meta = o.metadata!;
  const origin = originLabels(kind, { name: meta.name!, ...(kind === 'CiliumNetworkPolicy' ? { namespace: meta.namespace ?? 'default' } : {}), ...(meta.uid ? { uid: meta.uid } : {}) });
  return { rules: compiled.map((r) => r.raw), origin, warnings: [] };
}

/** Translates a CiliumNetworkPolicy (namespaced; no namespace means `default`). Throws PolicyError naming the field. */
export function translateCNP(obj: unknown): Translation {
  return translate(obj, 'CiliumNetworkPolicy');
}

/** Translates a CiliumClusterwideNetworkPolicy. Throws PolicyError naming the field. */
export function translateCCNP(obj: unknown): Translation {
  return translate(obj, 'CiliumClusterwideNetworkPolicy');
}
