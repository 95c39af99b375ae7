/**
 * The Hubble server's configuration, Cilium's flags: `--enable-hubble`, `--hubble-socket-path`
 * (Cilium: /var/run/cilium/hubble.sock; Cellium: hubble.sock beside the API's default socket,
 * /var/run/cellium/hubble.sock for root), `--hubble-event-buffer-capacity` (the ring of the last
 * flows: 2^n - 1, Cilium's default 4095) and `--hubble-metrics` (which Hubble metrics to serve on
 * the agent's Prometheus registry: flow, drop, tcp, port-distribution; none by default, as Cilium).
 */
import { resolve } from 'node:path';
import { bool, list, string, type Field, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';
import { defaultHubbleSocketPath } from '../../hubble/index.js';
import { HubbleConfigError } from './errors.js';

/** The Hubble metrics Cellium serves (Cilium's --hubble-metrics names). */
export const HUBBLE_METRICS = ['flow', 'drop', 'tcp', 'port-distribution'] as const;
/** A Hubble metric name. */
export type HubbleMetric = (typeof HUBBLE_METRICS)[number];

/** The default Hubble socket: hubble.sock in the directory of the API's default socket. */
export { defaultHubbleSocketPath };

/** The largest ring Cellium accepts (2^20 - 1 flows). */
export const MAX_EVENT_BUFFER_CAPACITY = 2 ** 20 - 1;

const capacityField: Field<number> = {
  kind: 'int',
  default: 4095,
  help: 'Flows the Hubble ring keeps (2^n - 1, e.g. 4095, 65535)',
  parse(raw: unknown): number {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > MAX_EVENT_BUFFER_CAPACITY || ((n + 1) & n) !== 0) {
      throw new HubbleConfigError('hubble-event-buffer-capacity', String(raw), `expected 2^n - 1 between 1 and ${MAX_EVENT_BUFFER_CAPACITY} (e.g. 4095 or 65535), as Cilium requires`);
    }
    return n;
  },
  format: (v) => String(v),
};

/** Schema of the hubble configuration. */
export const hubbleConfigSchema = {
  enableHubble: bool(false, 'Serve the Hubble Observer API (flows of the BPF datapath) on --hubble-socket-path'),
  hubbleSocketPath: {
    ...string(defaultHubbleSocketPath(), 'Unix socket of the Hubble Observer API (hubble observe --server unix://PATH)'),
    parse(raw: unknown): string {
      if (typeof raw !== 'string' || raw.trim() === '') throw new HubbleConfigError('hubble-socket-path', String(raw), 'expected a socket path, e.g. /var/run/cellium/hubble.sock');
      return resolve(raw.trim());
    },
  } satisfies Field<string>,
  hubbleEventBufferCapacity: capacityField,
  hubbleMetrics: {
    ...list([], `Hubble metrics on the Prometheus endpoint, comma-separated: ${HUBBLE_METRICS.join(', ')} (empty: none)`),
    parse(raw: unknown): readonly string[] {
      const items = list([], '').parse(raw).map((s) => s.trim()).filter((s) => s !== '');
      for (const m of items) {
        if (!(HUBBLE_METRICS as readonly string[]).includes(m)) throw new HubbleConfigError('hubble-metrics', m, `not a Hubble metric Cellium serves: use ${HUBBLE_METRICS.join(', ')}`);
      }
      return [...new Set(items)];
    },
  } satisfies Field<readonly string[]>,
};

/** The resolved hubble configuration. */
export type HubbleConfig = ValuesOf<typeof hubbleConfigSchema>;

/** Token for the hubble configuration. */
export const HubbleConfigToken = token<HubbleConfig>('HubbleConfig');
