/**
 * Conntrack lifetimes, shared by both datapaths (Cilium's flags and defaults): each a whole number
 * of seconds, passed to bpf_lxc as load-time constants and used by the memory datapath's table.
 */
import { duration, type Field } from '../../hive/config/fields.js';
import { DEFAULT_MONITOR_AGGREGATION_S, type CtTimeouts } from '../../datapath/conntrack.js';

/** A lifetime: a duration of whole seconds, at least 1 s (the datapath counts in seconds). */
function lifetime(def: string, help: string): Field<number> {
  const base = duration(def, help);
  return Object.freeze({
    ...base,
    parse(raw: unknown): number {
      const ms = base.parse(raw);
      if (ms < 1000 || ms % 1000 !== 0) throw new Error(`expected a whole number of seconds, at least 1s (e.g. 30s, 5m), got ${JSON.stringify(raw)}`);
      if (ms > 86_400_000 * 365) throw new Error(`expected at most one year, got ${JSON.stringify(raw)}`);
      return ms;
    },
  });
}

/** The conntrack lifetime fields of the datapath configuration (milliseconds, whole seconds). */
export const conntrackConfigSchema = {
  bpfCtTimeoutRegularTcp: lifetime('8000s', 'Conntrack lifetime of an established TCP connection (refreshed by every packet)'),
  bpfCtTimeoutRegularAny: lifetime('60s', 'Conntrack lifetime of a non-TCP flow (UDP, ICMP, ...), refreshed by every packet'),
  bpfCtTimeoutRegularTcpSyn: lifetime('60s', 'Conntrack lifetime of a TCP connection until a packet without SYN is seen'),
  bpfCtTimeoutRegularTcpFin: lifetime('10s', 'Conntrack lifetime of a TCP connection once both directions sent FIN, or one sent RST'),
  monitorAggregationInterval: lifetime('5s', 'Monitor aggregation: a flow direction is traced again only after this long, or on new TCP flags (new flows always are)'),
};

/** The lifetimes in seconds from the configuration's values. */
export function ctTimeoutsOf(cfg: {
  readonly bpfCtTimeoutRegularTcp: number; readonly bpfCtTimeoutRegularAny: number; readonly bpfCtTimeoutRegularTcpSyn: number; readonly bpfCtTimeoutRegularTcpFin: number;
  readonly monitorAggregationInterval?: number;
}): CtTimeouts {
  return {
    tcp: cfg.bpfCtTimeoutRegularTcp / 1000,
    any: cfg.bpfCtTimeoutRegularAny / 1000,
    syn: cfg.bpfCtTimeoutRegularTcpSyn / 1000,
    close: cfg.bpfCtTimeoutRegularTcpFin / 1000,
    report: (cfg.monitorAggregationInterval ?? DEFAULT_MONITOR_AGGREGATION_S * 1000) / 1000,
  };
}
