/**
 * The Endpoint: one local workload interface under the agent's management. It owns its state
 * machine (state.ts), its status log and health, its labels and identity, and a serialized event
 * queue through which every regeneration runs. Its API model is made in api-model.ts, its
 * snapshot's shape is in snapshot.ts; a build is recorded through recordDesiredPolicy/recordBuild. The regeneration itself is done by its owner (the
 * EndpointManager's regenerator), which the manager attaches when it exposes the endpoint.
 */
import type { ControllerStatus } from '../../hive/index.js';
import type { Identity } from '../identity/types.js';
import type { NamedPort, ResolvedPolicy } from '../policy/types.js';
import { EndpointError } from './errors.js';
import { EventQueue, type RegenerationRequest } from './event-queue.js';
import type { EndpointHealth, EndpointLogEntry, EndpointModel, EndpointState } from './model.js';
import { endpointModel } from './api-model.js';
import { EndpointLabels } from './labels.js';
import type { EndpointSnapshot } from './snapshot.js';
import { CNI_NETWORK_PROPERTY, DEFAULT_OPTIONS, IPAM_SOURCE_PROPERTY, cniAttachmentId, podKey, type EndpointSpec } from './spec.js';
import { NEW, canBuilderTransition, canTransition, isTerminating, type StoredState } from './state.js';
import type { EndpointView, RegenerationLevel } from './types.js';

/** What runs an endpoint's regenerations and knows its controllers (Cilium's regeneration owner). */
export interface EndpointOwner {
  /** Runs one regeneration of `ep`; rejects on failure. */
  regenerate(ep: Endpoint, req: RegenerationRequest, signal: AbortSignal): Promise<void>;
  /** Status of the controllers belonging to `ep`. */
  controllers(ep: Endpoint): readonly ControllerStatus[];
}

/** The policy an endpoint has in the datapath (or should have), for the model: a resolved policy without its entries. */
export type EndpointPolicyStatus = Omit<ResolvedPolicy, 'entries'> & { readonly identity: number };

/** How many status log entries an endpoint keeps. */
export const MAX_LOG_ENTRIES = 32;

type HealthStatus = EndpointHealth['bpf'];

const HEALTH_RANK: Record<HealthStatus, number> = { Disabled: 0, OK: 1, Warning: 2, Failure: 3 };

/** An endpoint. */
export class Endpoint implements EndpointView {
  private _id = 0;
  private _state: StoredState | typeof NEW = NEW;
  private lbl: EndpointLabels;
  private _identity?: Identity;
  private _options: Record<string, string>;
  private readonly entries: EndpointLogEntry[] = [];
  private bpfHealth: HealthStatus = 'Disabled';
  private policyHealth: HealthStatus = 'Disabled';
  private linkPresent = true;
  private owner?: EndpointOwner;
  private queue?: EventQueue;
  private readonly abort = new AbortController();
  private _namedPorts: readonly NamedPort[] = [];
  /** The policy last written to the datapath. */
  realizedPolicy?: EndpointPolicyStatus;
  /** The policy last computed for the endpoint. */
  desiredPolicy?: EndpointPolicyStatus;
  /** Hash of the datapath configuration last loaded (undefined: never loaded in this process). */
  datapathHash?: string;
  /** Hash found in the state directory at restore (what the program on the interface was built with). */
  restoredDatapathHash?: string;
  /** Successful regenerations so far. */
  regenerations = 0;
  /** When the GC first found the host interface gone (undefined while present). */
  linkGoneSince?: Date;

  constructor(
    private _spec: EndpointSpec,
    labels: readonly string[],
    options: Readonly<Record<string, string>> = {},
  ) {
    this.lbl = new EndpointLabels(labels);
    this._options = { ...DEFAULT_OPTIONS, ...options };
  }

  /** The validated attachment and addressing. */
  get spec(): EndpointSpec {
    return this._spec;
  }

  /** Where the addresses came from (the `cellium.io/ipam-source` property); undefined for the node pool. */
  get ipamSource(): string | undefined {
    const s = this._spec.properties?.[IPAM_SOURCE_PROPERTY];
    return typeof s === 'string' ? s : undefined;
  }

  /** The CNI network whose ADD made it (the `cellium.io/cni-network` property); undefined when not recorded. */
  get cniNetwork(): string | undefined {
    const s = this._spec.properties?.[CNI_NETWORK_PROPERTY];
    return typeof s === 'string' ? s : undefined;
  }

  /**
   * Replaces the spec's mutable parts (interface index and name, MACs, container name, k8s UID,
   * netns cookie, datapath configuration, properties); what the manager indexes must stay equal.
   */
  updateSpec(next: EndpointSpec): boolean {
    const fixed = ['containerId', 'containerIfName', 'ipv4', 'ipv6', 'podName', 'namespace'] as const;
    const moved = fixed.find((k) => next[k] !== this._spec[k]);
    if (moved) throw new EndpointError('failed', `updateSpec may not change ${moved} of endpoint ${this._id}`);
    const changed = JSON.stringify(next) !== JSON.stringify(this._spec);
    this._spec = { ...next, requestedId: this._spec.requestedId };
    return changed;
  }

  /** The endpoint ID (0 until the manager exposes the endpoint). */
  get id(): number {
    return this._id;
  }

  /** The stored state (`new` before the first transition is reported as waiting-for-identity). */
  get storedState(): StoredState | typeof NEW {
    return this._state;
  }

  /** The state as the API reports it: `not-ready` for a ready endpoint whose health is not OK. */
  get state(): EndpointState {
    if (this._state === NEW) return 'waiting-for-identity';
    if (this._state === 'ready' && this.health().overallHealth !== 'OK') return 'not-ready';
    return this._state;
  }

  /** See EndpointView. */
  get containerId(): string | undefined {
    return this.spec.containerId;
  }
  /** See EndpointView. */
  get ifName(): string {
    return this.spec.ifName;
  }
  /** See EndpointView. */
  get containerIfName(): string | undefined {
    return this.spec.containerIfName;
  }
  /** See EndpointView. */
  get ipv4(): string | undefined {
    return this.spec.ipv4;
  }
  /** See EndpointView. */
  get ipv6(): string | undefined {
    return this.spec.ipv6;
  }
  /** `ns/name` of the pod. */
  get podName(): string | undefined {
    return podKey(this.spec);
  }
  /** See EndpointView. */
  get namespace(): string | undefined {
    return this.spec.namespace;
  }
  /** `<container-id>:<container-ifname>`. */
  get cniAttachmentId(): string | undefined {
    return cniAttachmentId(this.spec);
  }
  /** See EndpointView: the policy revision realized in the datapath (undefined before the first build). */
  get realizedPolicyRevision(): number | undefined {
    return this.realizedPolicy?.revision;
  }
  /** The numeric security identity, once resolved. */
  get identity(): number | undefined {
    return this._identity?.id;
  }
  /** The full identity, once resolved. */
  get securityIdentity(): Identity | undefined {
    return this._identity;
  }
  /** Every identity-relevant label, sorted (orchestration plus user labels). */
  get labels(): readonly string[] {
    return this.lbl.all;
  }
  /** Labels added through the API (label-configuration user labels). */
  get customLabels(): readonly string[] {
    return this.lbl.userLabels;
  }
  /** Labels from the request and the orchestrator. */
  get originLabels(): readonly string[] {
    return this.lbl.originLabels;
  }
  /** The endpoint options. */
  get options(): Readonly<Record<string, string>> {
    return this._options;
  }
  /** Aborts when the endpoint is being deleted. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }
  /** Whether the manager has started the endpoint. */
  get started(): boolean {
    return this.owner !== undefined;
  }

  /**
   * Starts the endpoint under `id` (EndpointManager.expose). Throws when it already has an ID.
   */
  start(id: number, owner: EndpointOwner): void {
    if (this._id !== 0) throw new EndpointError('failed', `endpoint ID is already set to ${this._id}`, '/id');
    this._id = id;
    this.owner = owner;
    this.queue = new EventQueue(`endpoint ${id}`);
  }

  /** Cilium's setState: applies an allowed transition (logging the reason); returns false otherwise. */
  setState(to: StoredState, reason: string): boolean {
    if (!canTransition(this._state, to)) return false;
    this.applyState(to, reason);
    return true;
  }

  /** Cilium's BuilderSetStateLocked: setState plus the regeneration builder's own moves. */
  builderSetState(to: StoredState, reason: string): boolean {
    if (!canTransition(this._state, to) && !canBuilderTransition(this._state, to)) return false;
    this.applyState(to, reason);
    return true;
  }

  private applyState(to: StoredState, reason: string): void {
    this._state = to;
    this.logStatus('ok', reason);
  }

  /** Appends a status log entry (Cilium's LogStatus). */
  logStatus(code: EndpointLogEntry['code'], message: string): void {
    this.entries.push({ timestamp: new Date().toISOString(), code, message, state: this.state });
    if (this.entries.length > MAX_LOG_ENTRIES) this.entries.splice(0, this.entries.length - MAX_LOG_ENTRIES);
  }

  /** See EndpointView. */
  log(): readonly EndpointLogEntry[] {
    return [...this.entries];
  }

  /** Records the outcome of the datapath and policy parts of a regeneration. */
  setHealth(part: 'bpf' | 'policy', status: HealthStatus): void {
    if (part === 'bpf') this.bpfHealth = status;
    else this.policyHealth = status;
  }

  /** Records whether the host interface exists (GC). */
  setLinkPresent(present: boolean): void {
    this.linkPresent = present;
    this.linkGoneSince = present ? undefined : (this.linkGoneSince ?? new Date());
  }

  /** See EndpointView. */
  health(): EndpointHealth {
    const connected = this.linkPresent && !isTerminating(this._state);
    const worst = HEALTH_RANK[this.bpfHealth] >= HEALTH_RANK[this.policyHealth] ? this.bpfHealth : this.policyHealth;
    const overallHealth: HealthStatus = !connected && this._state !== 'disconnected' && HEALTH_RANK[worst] < HEALTH_RANK.Warning ? 'Warning' : worst;
    return { bpf: this.bpfHealth, policy: this.policyHealth, connected, overallHealth };
  }

  /** Sets the resolved identity. */
  setIdentity(identity: Identity | undefined): void {
    this._identity = identity;
  }

  /** Whether the identity is missing or was resolved from a different label set than the current one. */
  identityStale(): boolean {
    const want = this.identityLabels();
    const have = this._identity?.labels ?? [];
    return !this._identity || want.length !== have.length || want.some((l, i) => l !== have[i]);
  }

  /** The labels the identity is derived from: every label, or `reserved:init` when there are none (Cilium). */
  identityLabels(): string[] {
    const ls = [...this.labels];
    return ls.length ? ls : ['reserved:init'];
  }

  /** Adds and removes labels (adds become user labels); throws EndpointError naming a label that cannot be deleted. */
  modifyLabels(add: readonly string[], del: readonly string[]): boolean {
    return this.lbl.modify(add, del, this._id);
  }

  /** Adds orchestration labels (the namespace label, pod labels); later ones win per source:key. */
  mergeLabels(labels: readonly string[]): void {
    this.lbl.merge(labels);
  }

  /** The pod's named container ports (Cilium's k8sPorts): rules' named ingress ports resolve against them. */
  get namedPorts(): readonly NamedPort[] {
    return this._namedPorts;
  }

  /** Replaces the named ports (sorted, so the order a pod lists them in does not matter); returns whether they changed. */
  setNamedPorts(ports: readonly NamedPort[]): boolean {
    const next = [...ports].map((p) => ({ name: p.name, port: p.port, protocol: p.protocol }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.protocol - b.protocol || a.port - b.port);
    if (JSON.stringify(next) === JSON.stringify(this._namedPorts)) return false;
    this._namedPorts = next;
    return true;
  }

  /** Replaces the orchestration labels (PATCH /endpoint/{id} with labels); returns whether they changed. */
  replaceOriginLabels(labels: readonly string[]): boolean {
    return this.lbl.replaceOrigin(labels);
  }

  /** Replaces option values; returns whether anything changed. Validation is the caller's. */
  applyOptions(options: Readonly<Record<string, string>>): boolean {
    let changed = false;
    for (const [k, v] of Object.entries(options)) {
      if (this._options[k] !== v) changed = true;
      this._options[k] = v;
    }
    return changed;
  }

  /** Restores labels and options from a snapshot (restore path). */
  restoreFrom(snap: EndpointSnapshot): void {
    this.lbl = new EndpointLabels(snap.labels.orchestration, snap.labels.user);
    this._options = { ...DEFAULT_OPTIONS, ...snap.options };
    this._namedPorts = snap.namedPorts ?? [];
    this.restoredDatapathHash = snap.datapathHash;
  }

  /**
   * Queues a regeneration; coalesces with one already queued. A ready or regenerating endpoint
   * moves to waiting-to-regenerate when a new one is queued. Rejects on failure or deletion.
   */
  regenerate(reason: string, level: RegenerationLevel = 'no-rebuild'): Promise<void> {
    const owner = this.owner;
    const queue = this.queue;
    if (!owner || !queue) return Promise.reject(new EndpointError('failed', 'endpoint is not started: add it to the EndpointManager first'));
    if (isTerminating(this._state)) return Promise.reject(new EndpointError('failed', `endpoint ${this._id} is ${this._state}`));
    return queue.enqueueRegeneration(reason, level, (req) => owner.regenerate(this, req, this.abort.signal), () => {
      if (this._state === 'ready' || this._state === 'regenerating') {
        this.setState('waiting-to-regenerate', `Triggering endpoint regeneration due to ${reason}`);
      }
    });
  }

  /** Runs `fn` on the endpoint's event queue (after everything queued before it). */
  enqueue<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (!this.queue) return Promise.reject(new EndpointError('failed', 'endpoint is not started: add it to the EndpointManager first'));
    return this.queue.enqueue(what, fn);
  }

  /**
   * Cilium's bumpPolicyRevision: a policy change that does not select this endpoint's identity
   * leaves its map state valid, so its policy holds at `revision` too. Skipped while a
   * regeneration is queued (that one realizes the newest revision itself); while one is running,
   * only the desired policy moves (the build realizes it when it finishes).
   */
  bumpPolicyRevision(revision: number): void {
    if (this.regenerationQueued) return;
    if (this.desiredPolicy && this.desiredPolicy.revision < revision) this.desiredPolicy = { ...this.desiredPolicy, revision };
    if (this.storedState === 'regenerating') return;
    if (this.realizedPolicy && this.realizedPolicy.revision < revision) this.realizedPolicy = { ...this.realizedPolicy, revision };
  }

  /** Whether a regeneration is queued and not yet running. */
  get regenerationQueued(): boolean {
    return this.queue?.regenerationQueued ?? false;
  }

  /**
   * Moves to disconnecting, aborts the running regeneration and cancels queued events; resolves
   * once the queue is idle. Returns false when the endpoint was already disconnecting or gone.
   */
  async disconnect(reason: string): Promise<boolean> {
    if (!this.setState('disconnecting', reason)) return false;
    this.abort.abort(new EndpointError('failed', `endpoint ${this._id} is being deleted: ${reason}`));
    await this.queue?.close(`endpoint is being deleted: ${reason}`);
    return true;
  }

  /** Closes the event queue without a state change (agent stop): queued events are cancelled, the running one finishes. */
  async shutdown(reason: string): Promise<void> {
    await this.queue?.close(reason);
  }

  /** The persistent form for the state directory. */
  toSnapshot(): EndpointSnapshot {
    return {
      version: 1,
      id: this._id,
      spec: this.spec,
      labels: this.lbl.toSnapshot(),
      options: { ...this._options },
      ...(this._namedPorts.length ? { namedPorts: this._namedPorts } : {}),
      identity: this._identity?.id,
      datapathHash: this.datapathHash,
      policyRevision: this.realizedPolicy?.revision,
    };
  }

  /** See EndpointView: Cilium's Endpoint model (api-model.ts). */
  toModel(): EndpointModel {
    return endpointModel(this);
  }

  /** Status of the controllers belonging to this endpoint (none before it was started). */
  controllers(): readonly ControllerStatus[] {
    return this.owner ? this.owner.controllers(this) : [];
  }

  /** Records a computed policy: what the next build writes (regeneration). */
  recordDesiredPolicy(policy: EndpointPolicyStatus): void {
    this.desiredPolicy = policy;
  }

  /** Records a finished build: the datapath configuration it loaded and the policy it realized. */
  recordBuild(datapathHash: string): void {
    this.datapathHash = datapathHash;
    this.realizedPolicy = this.desiredPolicy;
  }

  /** Records a successful regeneration (counted for the status). */
  recordRegeneration(): void {
    this.regenerations++;
  }
}

export type { EndpointSnapshot } from './snapshot.js';
