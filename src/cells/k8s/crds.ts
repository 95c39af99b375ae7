/**
 * The Cilium CRDs the agent uses (CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy,
 * CiliumIdentity, CiliumEndpoint, CiliumNode; cilium.io/v2), shipped as deploy/crds/*.yaml, and
 * their registration at start: `ensureCrds` creates the missing ones and waits until every one is
 * Established.
 *
 * The rule for CRDs already there: each shipped CRD carries the annotation
 * `cellium.io/schema-version` (an integer). An installed CRD with that annotation and a LOWER number
 * is replaced by the shipped one (update, keeping its resourceVersion); one with an equal or higher
 * number is left alone (a newer agent installed it; rolling back never downgrades a schema); one
 * WITHOUT the annotation was installed by someone else (Cilium itself, an operator, by hand) and is
 * never touched: Cellium does not take over a schema it does not own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import type { Logger } from '../../hive/logger.js';
import { packageRoot } from '../../lib/package-root.js';
import { apiRequest, type RequestBounds } from './api-request.js';
import type { K8sClient } from './client.js';
import { K8sError } from './errors.js';

/** The annotation that versions a shipped CRD's schema (see the rule above). */
export const SCHEMA_VERSION_ANNOTATION = 'cellium.io/schema-version';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** A CRD as the apiserver and deploy/crds hold it (the fields ensureCrds reads). */
export interface Crd {
  apiVersion: string;
  kind: string;
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec: { group: string; names: { kind: string; plural: string } };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/** One shipped CRD: its name, schema version and manifest. */
export interface ShippedCrd {
  readonly name: string;
  readonly version: number;
  readonly file: string;
  readonly crd: Crd;
}

/** What ensureCrds did with one CRD. */
export interface CrdOutcome {
  readonly name: string;
  readonly action: 'created' | 'updated' | 'kept';
  /** Why it was kept (already current, newer, or not Cellium's). */
  readonly why?: string;
}

/** Options of ensureCrds. */
export interface EnsureCrdsOptions {
  /** The directory of the CRD YAMLs (default: deploy/crds of the package). */
  readonly dir?: string;
  /** How long to wait for each CRD to be Established (ms, default 60000). */
  readonly establishTimeoutMs?: number;
  /** Bound of each request (ms, default 30000). */
  readonly requestTimeoutMs?: number;
  /** Aborts the requests and the wait (the agent stopping). */
  readonly signal?: AbortSignal;
}

/** A shipped CRD file cannot be used (a packaging fault: names the file, the field and the fix). */
export function badCrdFile(file: string, field: string, why: string): K8sError {
  return new K8sError('config', `${file}: ${field}: ${why}; reinstall Cellium (deploy/crds ships with the package)`);
}

/** A CRD request failed; a 403 names the missing RBAC verb and how to grant it. */
export function crdRequestFailed(verb: string, name: string, status: number, message: string): K8sError {
  if (status === 403) {
    return new K8sError('api', `kubernetes: ${verb} customresourcedefinitions ${name} is forbidden (${message}); ` +
      `the agent's ClusterRole needs verb "${verb}" on customresourcedefinitions (apiGroup apiextensions.k8s.io): ` +
      'kubectl apply -f deploy/rbac.yaml, or install the CRDs as an admin: kubectl apply -f deploy/crds/');
  }
  return new K8sError('api', `kubernetes: ${verb} customresourcedefinitions ${name} failed: ${status} ${message}; check that the apiserver is reachable`);
}

/** A CRD did not become Established in time (names its conditions: a name conflict says so). */
export function crdNotEstablished(name: string, ms: number, conditions: string): K8sError {
  return new K8sError('api', `kubernetes: CRD ${name} is not Established after ${ms} ms (conditions: ${conditions || 'none'}); ` +
    `see kubectl describe crd ${name} (NamesAccepted=False means another CRD holds its names)`);
}

/** The shipped CRDs, read from `dir` (default deploy/crds of the package); bad files throw. */
export function shippedCrds(dir?: string): ShippedCrd[] {
  const root = packageRoot();
  const from = dir ?? (root ? join(root, 'deploy', 'crds') : '');
  if (!from) throw badCrdFile('deploy/crds', 'directory', 'not found: this module is not inside the Cellium package');
  let files: string[];
  try {
    files = readdirSync(from).filter((f) => f.endsWith('.yaml')).sort();
  } catch (err) {
    throw badCrdFile(from, 'directory', `cannot be read: ${(err as Error).message}`);
  }
  if (files.length === 0) throw badCrdFile(from, 'directory', 'has no *.yaml');
  return files.map((f) => {
    const file = join(from, f);
    const docs = parseAllDocuments(readFileSync(file, 'utf8'));
    if (docs.length !== 1 || docs[0]!.errors.length > 0) throw badCrdFile(file, 'document', `must be one YAML document${docs[0]?.errors[0] ? `: ${docs[0].errors[0].message}` : ''}`);
    const crd = docs[0]!.toJS() as Crd;
    if (crd?.kind !== 'CustomResourceDefinition' || crd.apiVersion !== 'apiextensions.k8s.io/v1') throw badCrdFile(file, 'kind', 'must be an apiextensions.k8s.io/v1 CustomResourceDefinition');
    const name = crd.metadata?.name;
    if (!name || name !== `${crd.spec?.names?.plural}.${crd.spec?.group}`) throw badCrdFile(file, 'metadata.name', 'must be <spec.names.plural>.<spec.group>');
    const version = schemaVersion(crd);
    if (version === undefined) throw badCrdFile(file, `metadata.annotations["${SCHEMA_VERSION_ANNOTATION}"]`, 'must be a positive integer');
    return { name, version, file, crd };
  });
}

/** The CRD's schema version annotation, or undefined when absent or not a positive integer. */
function schemaVersion(crd: Crd): number | undefined {
  const v = crd.metadata.annotations?.[SCHEMA_VERSION_ANNOTATION];
  return v !== undefined && /^[1-9][0-9]{0,8}$/.test(v) ? Number(v) : undefined;
}

/**
 * Registers the shipped CRDs on the apiserver of `client`: creates the missing ones, replaces ours
 * that are older, keeps the rest (the rule in this file's comment), then waits until each is
 * Established. Throws a K8sError naming the CRD, the verb and the fix (a 403: the RBAC rule).
 */
export async function ensureCrds(client: K8sClient, log: Logger, opts: EnsureCrdsOptions = {}): Promise<CrdOutcome[]> {
  const kc = client.kubeConfig();
  const timeout = opts.requestTimeoutMs ?? 30_000;
  const req: RequestBounds = { timeoutMs: timeout, ...(opts.signal ? { signal: opts.signal } : {}) };
  const outcomes: CrdOutcome[] = [];
  for (const shipped of shippedCrds(opts.dir)) {
    // A 409 means another agent changed the CRD between our read and write: read it again (bounded).
    let o: CrdOutcome | undefined;
    for (let attempt = 0; attempt < 5 && !o; attempt++) o = await ensureOne(kc, shipped, req);
    if (!o) throw crdRequestFailed('update', shipped.name, 409, 'still conflicting after 5 attempts (other agents keep changing it)');
    outcomes.push(o);
    log.info({ crd: o.name, action: o.action, why: o.why }, `CRD ${o.action}`);
  }
  for (const o of outcomes) await waitEstablished(kc, o.name, opts.establishTimeoutMs ?? 60_000, req);
  return outcomes;
}

/** One CRD by the rule; undefined when a write conflicted (409) and it must be read again. */
async function ensureOne(kc: KubeConfig, shipped: ShippedCrd, bounds: RequestBounds): Promise<CrdOutcome | undefined> {
  const path = `${CRD_PATH}/${shipped.name}`;
  const got = await apiRequest(kc, 'GET', path, undefined, bounds);
  if (got.status === 404) {
    const made = await apiRequest(kc, 'POST', CRD_PATH, shipped.crd, bounds);
    if (made.status === 409) return undefined;
    if (!isOk(made.status)) throw crdRequestFailed('create', shipped.name, made.status, made.message);
    return { name: shipped.name, action: 'created' };
  }
  if (!isOk(got.status)) throw crdRequestFailed('get', shipped.name, got.status, got.message);
  const current = got.body as Crd;
  const installed = schemaVersion(current);
  if (installed === undefined) return { name: shipped.name, action: 'kept', why: `installed without ${SCHEMA_VERSION_ANNOTATION} (not Cellium's)` };
  if (installed >= shipped.version) return { name: shipped.name, action: 'kept', why: `installed schema version ${installed} >= shipped ${shipped.version}` };
  const body: Crd = { ...shipped.crd, metadata: { ...shipped.crd.metadata, resourceVersion: current.metadata.resourceVersion } };
  const put = await apiRequest(kc, 'PUT', path, body, bounds);
  if (put.status === 409) return undefined;
  if (!isOk(put.status)) throw crdRequestFailed('update', shipped.name, put.status, put.message);
  return { name: shipped.name, action: 'updated', why: `schema version ${installed} -> ${shipped.version}` };
}

function isOk(status: number): boolean {
  return status >= 200 && status <= 299;
}

/** Polls the CRD until its Established condition is True (bounded by `ms`). */
async function waitEstablished(kc: KubeConfig, name: string, ms: number, bounds: RequestBounds): Promise<void> {
  const deadline = Date.now() + ms;
  let conditions = '';
  for (let i = 0; i < 100_000; i++) {
    const got = await apiRequest(kc, 'GET', `${CRD_PATH}/${name}`, undefined, bounds);
    if (!isOk(got.status)) throw crdRequestFailed('get', name, got.status, got.message);
    const conds = (got.body as Crd).status?.conditions ?? [];
    if (conds.some((c) => c.type === 'Established' && c.status === 'True')) return;
    conditions = conds.map((c) => `${c.type}=${c.status}${c.message ? ` (${c.message})` : ''}`).join(', ');
    if (Date.now() >= deadline || bounds.signal?.aborted) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw crdNotEstablished(name, ms, conditions);
}
