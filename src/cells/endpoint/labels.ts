/**
 * An endpoint's labels (Cilium's pkg/endpoint labels): the orchestration labels (from the request
 * and the orchestrator) and the user labels (added through the API), each kept parsed, canonical
 * and sorted; the identity-relevant set is both together.
 */
import { formatLabel, parseLabel, parseLabels } from '../../lib/labels.js';
import { EndpointError } from './errors.js';

const canonical = (labels: readonly string[]): string[] => parseLabels(labels).map(formatLabel);

/** The two label sets of an endpoint and their algebra. */
export class EndpointLabels {
  private orchestration: string[];
  private user: string[];

  constructor(orchestration: readonly string[], user: readonly string[] = []) {
    this.orchestration = canonical(orchestration);
    this.user = canonical(user);
  }

  /** Every identity-relevant label, sorted (orchestration plus user labels). */
  get all(): readonly string[] {
    return canonical([...this.orchestration, ...this.user]);
  }

  /** Labels added through the API. */
  get userLabels(): readonly string[] {
    return this.user;
  }

  /** Labels from the request and the orchestrator. */
  get originLabels(): readonly string[] {
    return this.orchestration;
  }

  /**
   * Adds and removes labels (adds become user labels); throws EndpointError naming a label that
   * cannot be parsed or is not set (`endpointId` for the message). Returns whether the set changed.
   */
  modify(add: readonly string[], del: readonly string[], endpointId: number): boolean {
    const parse = (raw: string, field: string): string => {
      try {
        return formatLabel(parseLabel(raw));
      } catch (err) {
        throw new EndpointError('invalid', (err as Error).message, field);
      }
    };
    const adds = add.map((l, i) => parse(l, `/add/${i}`));
    const dels = del.map((l, i) => parse(l, `/delete/${i}`));
    dels.forEach((l, i) => {
      if (!this.user.includes(l) && !this.orchestration.includes(l)) {
        throw new EndpointError('invalid', `label ${l} is not set on endpoint ${endpointId}`, `/delete/${i}`);
      }
    });
    const before = this.all.join(';');
    this.user = canonical([...this.user.filter((l) => !dels.includes(l)), ...adds]);
    this.orchestration = this.orchestration.filter((l) => !dels.includes(l));
    return this.all.join(';') !== before;
  }

  /** Adds orchestration labels (the namespace label, pod labels); later ones win per source:key. */
  merge(labels: readonly string[]): void {
    this.orchestration = canonical([...this.orchestration, ...labels]);
  }

  /** Replaces the orchestration labels; returns whether they changed. */
  replaceOrigin(labels: readonly string[]): boolean {
    const next = canonical(labels);
    const changed = next.join(';') !== this.orchestration.join(';');
    this.orchestration = next;
    return changed;
  }

  /** Both sets as the state directory keeps them. */
  toSnapshot(): { orchestration: string[]; user: string[] } {
    return { orchestration: [...this.orchestration], user: [...this.user] };
  }
}
