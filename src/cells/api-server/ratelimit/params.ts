/**
 * Parameters of an API rate limiter and Cilium's `--api-rate-limit` syntax:
 * `endpoint-create=rate-limit:10/s,rate-burst:20,max-parallel-requests:16,endpoint-get=rate-limit:5/s`
 * (an entry starts at `NAME=`; the `option:value` pairs after it, comma separated, belong to it),
 * or a JSON object `{"endpoint-create": "rate-limit:10/s,rate-burst:20"}`.
 */
import { parseDuration } from '../../../hive/config/duration.js';

/** One limiter's parameters (Cilium's APILimiterParameters; durations in ms, rate in requests/s). */
export interface LimiterParams {
  /** Expected processing time; auto-adjust steers towards it. */
  readonly estimatedProcessingMs: number;
  /** Adjust rate, burst and parallel requests to keep processing near the estimate. */
  readonly autoAdjust: boolean;
  /** How many recent requests the means are taken over. */
  readonly meanOver: number;
  /** Parallel requests allowed (0: unlimited); adjusted when autoAdjust. */
  readonly parallelRequests: number;
  readonly minParallelRequests: number;
  /** Upper bound of the adjusted parallel requests (0: none). */
  readonly maxParallelRequests: number;
  /** Requests per second (0: no rate limit). */
  readonly rateLimit: number;
  readonly rateBurst: number;
  /** Every request waits at least this long. */
  readonly minWaitMs: number;
  /** A request that would wait longer is refused with 429 (0: waits as long as needed). */
  readonly maxWaitMs: number;
  /** Log every processed request at info level. */
  readonly log: boolean;
  /** Share (0..1) of the adjustment applied to burst and parallel requests. */
  readonly delayedAdjustmentFactor: number;
  /** The first N requests are not limited (a learning phase for auto-adjust). */
  readonly skipInitial: number;
  /** Adjusted values stay within base/N..base*N. */
  readonly maxAdjustmentFactor: number;
}

/** The limiter names Cellium uses (Cilium's). */
export const ApiLimiterName = {
  endpointCreate: 'endpoint-create',
  endpointDelete: 'endpoint-delete',
  endpointGet: 'endpoint-get',
  endpointPatch: 'endpoint-patch',
  endpointList: 'endpoint-list',
} as const;

const BASE: LimiterParams = {
  estimatedProcessingMs: 0,
  autoAdjust: false,
  meanOver: 10,
  parallelRequests: 0,
  minParallelRequests: 1,
  maxParallelRequests: 0,
  rateLimit: 0,
  rateBurst: 1,
  minWaitMs: 0,
  maxWaitMs: 0,
  log: false,
  delayedAdjustmentFactor: 0.5,
  skipInitial: 0,
  maxAdjustmentFactor: 100,
};

/** Cilium's defaults for the endpoint APIs (daemon/restapi/api_limits.go). */
export const DEFAULT_LIMITS: Readonly<Record<string, LimiterParams>> = {
  [ApiLimiterName.endpointCreate]: {
    ...BASE, autoAdjust: true, estimatedProcessingMs: 2000, rateLimit: 0.5, rateBurst: 4, parallelRequests: 4,
    minParallelRequests: 2, skipInitial: 4, maxWaitMs: 60_000,
  },
  [ApiLimiterName.endpointDelete]: {
    ...BASE, autoAdjust: true, estimatedProcessingMs: 200, parallelRequests: 4, minParallelRequests: 4,
  },
  [ApiLimiterName.endpointGet]: {
    ...BASE, autoAdjust: true, estimatedProcessingMs: 200, rateLimit: 4, rateBurst: 4, parallelRequests: 4,
    minParallelRequests: 2, skipInitial: 4, maxWaitMs: 10_000,
  },
  [ApiLimiterName.endpointPatch]: {
    ...BASE, autoAdjust: true, estimatedProcessingMs: 1000, rateLimit: 0.5, rateBurst: 4, parallelRequests: 4,
    skipInitial: 4, maxWaitMs: 15_000,
  },
  [ApiLimiterName.endpointList]: {
    ...BASE, autoAdjust: true, estimatedProcessingMs: 300, rateLimit: 1, rateBurst: 4, parallelRequests: 2,
    minParallelRequests: 2,
  },
};

const uint = (v: string): number => {
  if (!/^\d+$/.test(v)) throw new Error(`expected a non-negative integer, got "${v}"`);
  return Number(v);
};
const float = (v: string): number => {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`expected a non-negative number, got "${v}"`);
  return n;
};
const boolean = (v: string): boolean => {
  if (/^(true|1|t)$/i.test(v)) return true;
  if (/^(false|0|f)$/i.test(v)) return false;
  throw new Error(`expected true or false, got "${v}"`);
};
const dur = (v: string): number => parseDuration(v);

/** `10/s`, `5/m`, `1/2s`, `0.5/s` -> requests per second. A bare number interval (`10/10`) is refused, like Cilium. */
export function parseRate(v: string): number {
  const [count, interval] = v.split('/', 2) as [string, string | undefined];
  if (interval === undefined) throw new Error(`expected a rate such as 10/s, 5/m or 1/2s, got "${v}"`);
  const n = float(count);
  if (/^\d+(\.\d+)?$/.test(interval)) throw new Error(`the interval "${interval}" of rate "${v}" needs a unit (e.g. ${count}/s)`);
  const ms = dur(/^\d/.test(interval) ? interval : `1${interval}`);
  if (ms <= 0) throw new Error(`the interval of rate "${v}" must be longer than 0`);
  return n / (ms / 1000);
}

type Setter = (p: Record<string, unknown>, v: string) => void;

const OPTIONS: Readonly<Record<string, Setter>> = {
  'rate-limit': (p, v) => (p.rateLimit = parseRate(v)),
  'rate-burst': (p, v) => (p.rateBurst = uint(v)),
  'min-wait-duration': (p, v) => (p.minWaitMs = dur(v)),
  'max-wait-duration': (p, v) => (p.maxWaitMs = dur(v)),
  'estimated-processing-duration': (p, v) => (p.estimatedProcessingMs = dur(v)),
  'auto-adjust': (p, v) => (p.autoAdjust = boolean(v)),
  'parallel-requests': (p, v) => (p.parallelRequests = uint(v)),
  'min-parallel-requests': (p, v) => (p.minParallelRequests = uint(v)),
  'max-parallel-requests': (p, v) => (p.maxParallelRequests = uint(v)),
  'mean-over': (p, v) => (p.meanOver = Math.max(1, uint(v))),
  log: (p, v) => (p.log = boolean(v)),
  'delayed-adjustment-factor': (p, v) => (p.delayedAdjustmentFactor = float(v)),
  'max-adjustment-factor': (p, v) => (p.maxAdjustmentFactor = Math.max(1, float(v))),
  'skip-initial': (p, v) => (p.skipInitial = uint(v)),
};

/** Every option name `--api-rate-limit` accepts. */
export const LIMITER_OPTIONS: readonly string[] = Object.keys(OPTIONS);

/**
 * Merges `option:value,option:value` into `base` (Cilium's mergeUserConfig). Throws naming the API
 * and the option when one is unknown or its value does not parse.
 */
export function mergeLimiterConfig(api: string, base: LimiterParams, text: string): LimiterParams {
  const p: Record<string, unknown> = { ...base };
  for (const tok of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const colon = tok.indexOf(':');
    if (colon <= 0) throw new Error(`${api}: "${tok}" is not option:value (e.g. ${api}=rate-limit:10/s,rate-burst:20)`);
    const key = tok.slice(0, colon).trim().toLowerCase();
    const value = tok.slice(colon + 1).trim();
    const set = OPTIONS[key];
    if (!set) throw new Error(`${api}: unknown rate limiting option "${key}" (known: ${LIMITER_OPTIONS.join(', ')})`);
    try {
      set(p, value);
    } catch (err) {
      throw new Error(`${api}: option "${key}": ${(err as Error).message}`, { cause: err });
    }
  }
  return p as unknown as LimiterParams;
}

/**
 * Parses the `--api-rate-limit` value into option text per API name (Cilium's ToStringMapStringE):
 * a JSON object, or `name=opts[,opts…][,name=opts…]`.
 */
export function parseApiRateLimit(raw: unknown): Readonly<Record<string, string>> {
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw)) {
      if (typeof v !== 'string') throw new Error(`${k}: expected option text such as "rate-limit:10/s,rate-burst:20", got ${JSON.stringify(v)}`);
      out[k] = v;
    }
    return out;
  }
  if (typeof raw !== 'string') throw new Error(`expected NAME=option:value[,option:value] (e.g. endpoint-create=rate-limit:10/s), got ${JSON.stringify(raw)}`);
  const text = raw.trim();
  if (text === '') return {};
  if (text.startsWith('{')) {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new Error(`not valid JSON: ${(err as Error).message}`, { cause: err });
    }
    return parseApiRateLimit(doc);
  }
  const out: Record<string, string> = {};
  let current: string | undefined;
  for (const tok of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = tok.indexOf('=');
    const colon = tok.indexOf(':');
    if (eq > 0 && (colon < 0 || eq < colon)) {
      current = tok.slice(0, eq).trim();
      if (!/^[a-z0-9][a-z0-9-]*$/.test(current)) throw new Error(`"${current}" is not an API name (e.g. endpoint-create)`);
      out[current] = tok.slice(eq + 1).trim();
    } else if (current === undefined) {
      throw new Error(`"${tok}" comes before any API name: write NAME=option:value (e.g. endpoint-create=rate-limit:10/s)`);
    } else {
      out[current] = `${out[current]},${tok}`;
    }
  }
  return out;
}

/** The parameters of every limiter: the defaults with the user's options merged in, plus user-only APIs. */
export function resolveLimits(user: Readonly<Record<string, string>>, defaults = DEFAULT_LIMITS): Record<string, LimiterParams> {
  const out: Record<string, LimiterParams> = {};
  for (const [name, p] of Object.entries(defaults)) out[name] = user[name] !== undefined ? mergeLimiterConfig(name, p, user[name]!) : p;
  for (const [name, text] of Object.entries(user)) if (!(name in out)) out[name] = mergeLimiterConfig(name, BASE, text);
  return out;
}
