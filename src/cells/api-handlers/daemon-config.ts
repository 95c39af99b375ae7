/**
 * The agent's mutable options (Cilium's daemon options behind GET|PATCH /config): the endpoint
 * option defaults (Debug, PolicyAuditMode, ...) and the policy enforcement mode. A change is
 * published on `changes$` and every endpoint is regenerated.
 */
import { BehaviorSubject, type Observable } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { DEFAULT_OPTIONS, ENDPOINT_OPTIONS } from '../endpoint/types.js';
import type { EndpointManager } from '../endpoint/types.js';
import { badField } from '../api-server/index.js';

/** Cilium's policy enforcement modes. */
export type PolicyEnforcement = 'default' | 'always' | 'never';

/** The agent's mutable configuration. */
export interface DaemonOptionsState {
  readonly options: Readonly<Record<string, string>>;
  readonly policyEnforcement: PolicyEnforcement;
}

/** The agent's mutable options. */
export interface DaemonOptions {
  current(): DaemonOptionsState;
  /**
   * Applies a change (options by name, values as Cilium accepts them: Enabled/Disabled, true/false,
   * on/off). Throws a 400 naming `/body/options/<name>` for an unknown option or value. Resolves
   * with whether anything changed, once the endpoints were regenerated.
   */
  update(change: { options?: Readonly<Record<string, string>>; policyEnforcement?: PolicyEnforcement }): Promise<boolean>;
  readonly changes$: Observable<DaemonOptionsState>;
}

/** Token for the agent's mutable options. */
export const DaemonOptionsToken = token<DaemonOptions>('DaemonOptions');

/** Normalizes a value for an option: booleans to Enabled/Disabled; undefined when not allowed. */
export function normalizeOption(name: string, value: string): string | undefined {
  const allowed = ENDPOINT_OPTIONS[name];
  if (!allowed) return undefined;
  const exact = allowed.find((a) => a.toLowerCase() === value.trim().toLowerCase());
  if (exact) return exact;
  if (allowed.includes('Enabled')) {
    if (/^(true|on|yes|1|enable)$/i.test(value.trim())) return 'Enabled';
    if (/^(false|off|no|0|disable)$/i.test(value.trim())) return 'Disabled';
  }
  return undefined;
}

/** The default DaemonOptions. */
export class DaemonOptionsStore implements DaemonOptions {
  private readonly state: BehaviorSubject<DaemonOptionsState>;
  /** See DaemonOptions. */
  readonly changes$: Observable<DaemonOptionsState>;

  constructor(
    private readonly endpoints: EndpointManager,
    private readonly log: Logger,
  ) {
    this.state = new BehaviorSubject<DaemonOptionsState>({ options: { ...DEFAULT_OPTIONS }, policyEnforcement: 'default' });
    this.changes$ = this.state.asObservable();
  }

  /** See DaemonOptions. */
  current(): DaemonOptionsState {
    return this.state.getValue();
  }

  /** See DaemonOptions. */
  async update(change: { options?: Readonly<Record<string, string>>; policyEnforcement?: PolicyEnforcement }): Promise<boolean> {
    const cur = this.current();
    const options = { ...cur.options };
    for (const [name, raw] of Object.entries(change.options ?? {})) {
      if (!ENDPOINT_OPTIONS[name]) throw badField(`/body/options/${name}`, `unknown option ${name}`, `one of ${Object.keys(ENDPOINT_OPTIONS).join(', ')}`);
      const v = normalizeOption(name, raw);
      if (v === undefined) throw badField(`/body/options/${name}`, `invalid value ${JSON.stringify(raw)} for option ${name}`, `one of ${ENDPOINT_OPTIONS[name]!.join(', ')}`);
      options[name] = v;
    }
    const policyEnforcement = change.policyEnforcement ?? cur.policyEnforcement;
    const changed = policyEnforcement !== cur.policyEnforcement || Object.keys(options).some((k) => options[k] !== cur.options[k]);
    if (!changed) return false;
    this.state.next({ options, policyEnforcement });
    this.log.info({ options, policyEnforcement }, 'agent configuration changed; regenerating endpoints');
    await this.endpoints.regenerateAll('agent configuration changed');
    return true;
  }
}
