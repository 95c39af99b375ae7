/** The agent-status cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { module, provide, type DepsValues } from '../../hive/cell.js';
import { ControllerManagerToken, type ControllerManager } from '../../hive/controller/manager.js';
import { HealthTreeToken, type HealthNode, type HealthTree } from '../../hive/health.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { groupToken, token } from '../../hive/token.js';
import { packageVersion } from '../../api/repo-files.js';
import type { StatusResponse } from '../../api/models.js';
import { DatapathToken, type Datapath } from '../../datapath/types.js';
import { IdentityAllocatorToken, type IdentityAllocator } from '../identity/types.js';
import { IPAMToken, ipamSummary, type IPAM } from '../ipam/index.js';

/** Collects the agent's status. */
export interface AgentStatus {
  /** The StatusResponse; with `brief`, only the agent state (`cilium`). */
  status(brief?: boolean): Promise<StatusResponse>;
  /** The same as JSON text, serialized once per change of the status (GET /healthz is polled). */
  statusJson(brief?: boolean): Promise<string>;
}

/** Token for the status collector. */
export const AgentStatusToken = token<AgentStatus>('AgentStatus');

/** A component status another cell adds to the StatusResponse (the kvstore's `kvstore` line, the k8s cell's `kubernetes`). */
export interface StatusSection {
  readonly key: 'kvstore' | 'kubernetes';
  status(): { readonly state: 'Ok' | 'Warning' | 'Failure' | 'Disabled'; readonly msg: string; readonly 'k8s-api-versions'?: string[] };
}

/** Value group of the status sections cells contribute (provideInto). */
export const StatusSectionsToken = groupToken<StatusSection>('StatusSections');

/** The agent's version (package.json), shown in the state message. */
export function agentVersion(): string {
  return packageVersion();
}

/** Paths (`agent/endpoint/endpoint-gc`) of the degraded nodes of a health tree. */
export function degradedPaths(node: HealthNode, prefix = ''): string[] {
  const here = prefix ? `${prefix}/${node.name}` : node.name;
  const below = node.children.flatMap((c) => degradedPaths(c, here));
  if (below.length) return below;
  return node.level === 'degraded' ? [`${here}${node.message ? ` (${node.message})` : ''}`] : [];
}

/** Cilium's agent state from the health tree: Ok, or Warning naming the degraded modules. */
export function agentState(tree: HealthNode, version: string, datapathMode: string): NonNullable<StatusResponse['cilium']> {
  const base = `cellium ${version} (datapath ${datapathMode})`;
  if (tree.level === 'degraded') return { state: 'Warning', msg: `${base}; degraded: ${degradedPaths(tree).join(', ')}` };
  if (tree.level === 'stopped') return { state: 'Failure', msg: `${base}; stopped` };
  return { state: 'Ok', msg: base };
}

/** Copies the health tree into plain objects (no undefined fields). */
function healthModel(n: HealthNode): NonNullable<StatusResponse['cellium-health']> {
  return { name: n.name, level: n.level, message: n.message, ...(n.error ? { error: n.error } : {}), updatedAt: n.updatedAt, children: n.children.map(healthModel) };
}

/** How often the background probe counts the BPF maps' entries (Cilium's status collector interval). */
export const STATUS_PROBE_INTERVAL_MS = 5000;

type MapStatus = NonNullable<NonNullable<StatusResponse['bpf-maps']>['maps']>;

/** The default collector. */
export class StatusCollector implements AgentStatus {
  private readonly version = agentVersion();
  private maps?: Promise<MapStatus>;
  private cached?: { readonly key: readonly unknown[]; readonly value: StatusResponse; text?: string };

  constructor(
    private readonly health: HealthTree,
    private readonly controllers: ControllerManager,
    private readonly ipam: IPAM,
    private readonly identities: IdentityAllocator,
    private readonly datapath: Datapath,
    jobs: Jobs,
    private readonly sections: readonly StatusSection[] = [],
  ) {
    jobs.timer('status-probe-bpf-maps', async () => {
      const next = this.probeMaps();
      await next;
      this.maps = next;
    }, STATUS_PROBE_INTERVAL_MS);
  }

  private async probeMaps(): Promise<MapStatus> {
    return (await this.datapath.maps.summary()).map((m) => ({ name: m.name, size: m.size }));
  }

  /** See AgentStatus. */
  async status(brief = false): Promise<StatusResponse> {
    if (brief) return { cilium: agentState(this.health.snapshot(), this.version, this.datapath.mode) };
    return (await this.collect()).value;
  }

  /** See AgentStatus. */
  async statusJson(brief = false): Promise<string> {
    if (brief) return JSON.stringify(await this.status(true));
    const c = await this.collect();
    c.text ??= JSON.stringify(c.value);
    return c.text;
  }

  /**
   * The full status, rebuilt only when something in it changed: the health tree (a new snapshot
   * object on every change), the controllers' run counts, the IPAM allocations or the maps probe.
   */
  private async collect(): Promise<{ readonly value: StatusResponse; text?: string }> {
    if (!this.maps) {
      const probe = this.probeMaps();
      this.maps = probe;
      probe.catch(() => {
        if (this.maps === probe) this.maps = undefined;
      });
    }
    const tree = this.health.snapshot();
    const controllers = this.controllers.statuses();
    const allocations = this.ipam.allocations();
    const mapsProbe = this.maps;
    const sections = this.sections.map((x) => [x.key, x.status()] as const);
    const key = [
      sections.map(([k, v]) => `${k}=${v.state}:${v.msg}`).join(','),
      tree,
      mapsProbe,
      controllers.map((c) => `${c.name}:${c.status['success-count']}:${c.status['failure-count']}`).join(','),
      allocations.map((a) => `${a.ip}=${a.owner}`).join(','),
    ];
    if (this.cached && key.every((k, i) => k === this.cached!.key[i])) return this.cached;
    // a failing datapath probe leaves the maps out rather than failing the whole status
    const maps = await mapsProbe.catch((): MapStatus => []);
    const range = this.identities.range;
    const bpf = this.datapath.mode === 'bpf';
    const value: StatusResponse = {
      cilium: agentState(tree, this.version, this.datapath.mode),
      'cellium-datapath': this.datapath.mode,
      // veth devices and BPF maps exist only with the BPF datapath; the memory one has neither
      ...(bpf ? { 'datapath-mode': 'veth' as const } : {}),
      ipam: ipamSummary(this.ipam.status(), allocations),
      controllers: controllers.map((c) => ({ ...c, configuration: { ...c.configuration }, status: { ...c.status } })),
      ...Object.fromEntries(sections.map(([k, v]) => [k, { ...v }])),
      'identity-range': { 'min-identity': range.minGlobal, 'max-identity': range.maxGlobal },
      ...(bpf ? { 'bpf-maps': { maps: maps.map((m) => ({ ...m })) } } : {}),
      'cellium-health': healthModel(tree),
    };
    this.cached = { key, value };
    return this.cached;
  }
}

/** What the status collector is built from. */
const collectorDeps = {
  health: HealthTreeToken, controllers: ControllerManagerToken, ipam: IPAMToken, identities: IdentityAllocatorToken,
  datapath: DatapathToken, jobs: JobsToken, sections: StatusSectionsToken,
} as const;

/** Builds the status collector (its BPF maps probe a timer job of this module). */
function newStatusCollector(d: DepsValues<typeof collectorDeps>): StatusCollector {
  return new StatusCollector(d.health, d.controllers, d.ipam, d.identities, d.datapath, d.jobs, d.sections);
}

/** The status collector cell. */
export const agentStatusCell = module(
  'agent-status',
  'Agent status collector',
  provide(AgentStatusToken, newStatusCollector, collectorDeps),
);
