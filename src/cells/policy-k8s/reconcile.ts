/**
 * Keeps the policy repository in step with the Kubernetes policy objects of one kind: an added or
 * updated object replaces its previous rules in one import; a deleted one's rules are deleted; an
 * invalid one changes nothing (its previous valid version stays applied: fail closed, see
 * docs/cells/policy-k8s.md) and is reported; at the resource's `sync`, rules of this kind whose
 * object no longer exists (deleted while the agent was down) are deleted. Before `sync` nothing is
 * deleted except on an explicit delete event.
 */
import { parseLabel } from '../../lib/labels.js';
import { PolicyError, type PolicyRepository, type PolicyRule } from '../policy/index.js';
import type { Logger } from '../../hive/logger.js';
import { translateCCNP, translateCNP } from './cilium-policy.js';
import { originLabels, translateNetworkPolicy } from './network-policy.js';
import type { Translation } from './types.js';

/** The kinds of policy objects read from Kubernetes. */
export type PolicyKind = 'NetworkPolicy' | 'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy';

/** What the reconciler reads of an object. */
export interface PolicyObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly uid?: string; readonly resourceVersion?: string };
}

/** One event of a policy resource (the k8s cell's ResourceEvent, structurally). */
export type PolicyEvent =
  | { readonly kind: 'upsert' | 'delete'; readonly key: string; readonly object: PolicyObject }
  | { readonly kind: 'sync' };

/** Where an invalid object is reported (a Kubernetes Event on it, in the cell). */
export type InvalidReporter = (kind: PolicyKind, obj: PolicyObject, err: PolicyError) => Promise<void>;

const TRANSLATE: Record<PolicyKind, (obj: unknown) => Translation> = {
  NetworkPolicy: translateNetworkPolicy,
  CiliumNetworkPolicy: translateCNP,
  CiliumClusterwideNetworkPolicy: translateCCNP,
};

const LABEL = 'io.cilium.k8s.policy.';

/** Whether a kind is namespaced (CCNPs are not; the others default to namespace `default`). */
function namespaced(kind: PolicyKind): boolean {
  return kind !== 'CiliumClusterwideNetworkPolicy';
}

/**
 * The labels naming an object regardless of its uid (derived-from, name, namespace): the same name
 * recreated (a new uid) still replaces the old rules, and a delete removes every version.
 */
export function objectLabels(kind: PolicyKind, obj: PolicyObject): string[] {
  const name = obj.metadata?.name ?? '';
  const namespace = namespaced(kind) ? obj.metadata?.namespace || 'default' : undefined;
  return originLabels(kind, { name, ...(namespace ? { namespace } : {}) });
}

/** The cache key of the object a rule came from (`namespace/name`, or `name`), or undefined when it did not come from `kind`. */
export function ruleObjectKey(kind: PolicyKind, rule: PolicyRule): string | undefined {
  const labels = new Map<string, string>();
  for (const raw of rule.labels ?? []) {
    try {
      const l = parseLabel(raw);
      if (l.source === 'k8s' && l.key.startsWith(LABEL)) labels.set(l.key.slice(LABEL.length), l.value);
    } catch {
      // not a label of ours
    }
  }
  if (labels.get('derived-from') !== kind || !labels.get('name')) return undefined;
  const namespace = namespaced(kind) ? labels.get('namespace') || 'default' : undefined;
  return namespace ? `${namespace}/${labels.get('name')}` : labels.get('name');
}

/** The reconciler of one kind (see the module comment). */
export class PolicyReconciler {
  /** Keys of the objects of this kind whose current version is invalid (not applied). */
  readonly invalid = new Map<string, PolicyError>();

  constructor(
    readonly kind: PolicyKind,
    private readonly repo: PolicyRepository,
    private readonly log: Logger,
    private readonly report: InvalidReporter,
  ) {}

  /** Handles one event; `exists(key)` says whether an object is in the (synced) cache. */
  async handle(ev: PolicyEvent, exists: (key: string) => boolean): Promise<void> {
    if (ev.kind === 'sync') this.prune(exists);
    else if (ev.kind === 'delete') this.remove(ev.key, ev.object);
    else this.apply(ev.key, ev.object);
  }

  /**
   * Applies an added or updated object in one repository change (synchronous: a batch applied in
   * one turn is seen whole by every regeneration); an invalid one is reported in the background.
   */
  apply(key: string, obj: PolicyObject): void {
    const change = this.prepare(key, obj);
    if (!change) return;
    const done = this.repo.import(change.import, { replaceWithLabels: change.replaceWithLabels });
    this.log.info({ kind: this.kind, object: key, revision: done.revision }, 'Kubernetes policy applied');
  }

  /**
   * What applying an added or updated object changes in the repository: an import of its rules
   * replacing its previous ones; undefined when nothing changes (invalid: reported in the
   * background, its previous version stays; or unchanged).
   */
  prepare(key: string, obj: PolicyObject): { readonly import: string; readonly replaceWithLabels: string[] } | undefined {
    const at = { kind: this.kind, object: key };
    let t: Translation;
    try {
      t = TRANSLATE[this.kind](obj);
    } catch (err) {
      if (!(err instanceof PolicyError)) throw err;
      this.invalid.set(key, err);
      const kept = this.repo.get(objectLabels(this.kind, obj)).length;
      this.log.warn({ ...at, field: err.pointer || '/', err: err.message, keptRules: kept }, 'invalid Kubernetes policy not applied; its previous version stays');
      void this.report(this.kind, obj, err).catch((e: Error) => this.log.warn({ ...at, err: e.message }, 'could not report the invalid policy as a Kubernetes Event'));
      return undefined;
    }
    for (const w of t.warnings) this.log.warn({ ...at, warning: w }, 'part of a Kubernetes policy left out (allows less)');
    this.invalid.delete(key);
    const labels = objectLabels(this.kind, obj);
    if (JSON.stringify(this.repo.get(labels)) === JSON.stringify(t.rules)) {
      // unchanged (the replay at start of what the policy store restored): no new revision, no regeneration
      this.log.debug(at, 'Kubernetes policy unchanged');
      return undefined;
    }
    // one change: the object's previous rules go as its new ones come
    return { import: JSON.stringify(t.rules), replaceWithLabels: labels };
  }

  /** Deletes a deleted object's rules. */
  remove(key: string, obj: PolicyObject): void {
    const change = this.repo.delete(this.removal(key, obj));
    this.log.info({ kind: this.kind, object: key, deleted: change.deleted, revision: change.revision }, 'Kubernetes policy deleted');
  }

  /** A deleted object: it is no longer invalid; the labels naming its rules (every version's). */
  removal(key: string, obj: PolicyObject): string[] {
    this.invalid.delete(key);
    return objectLabels(this.kind, obj);
  }

  /** Deletes the rules of this kind whose object `exists` does not know (deleted while the agent was down). */
  prune(exists: (key: string) => boolean): void {
    for (const { key, labels } of this.stale(exists)) {
      const change = this.repo.delete(labels);
      this.log.info({ kind: this.kind, object: key, deleted: change.deleted }, 'rules of a Kubernetes policy deleted while the agent was down removed at sync');
    }
  }

  /** The objects of this kind that have rules and that `exists` does not know, with the labels naming their rules. */
  stale(exists: (key: string) => boolean): { readonly key: string; readonly labels: string[] }[] {
    const gone = new Set<string>();
    for (const rule of this.repo.get([`k8s:${LABEL}derived-from=${this.kind}`])) {
      const key = ruleObjectKey(this.kind, rule);
      if (key !== undefined && !exists(key)) gone.add(key);
    }
    return [...gone].map((key) => {
      const [namespace, name] = key.includes('/') ? key.split('/', 2) : [undefined, key];
      return { key, labels: objectLabels(this.kind, { metadata: { name, ...(namespace ? { namespace } : {}) } }) };
    });
  }
}
