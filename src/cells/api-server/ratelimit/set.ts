/** The set of API limiters by name (Cilium's APILimiterSet), reporting every request on `reports$`. */
import { Subject, type Observable } from 'rxjs';
import { token } from '../../../hive/token.js';
import { ApiLimiter, type LimitedRequest, type LimiterReport } from './limiter.js';
import type { LimiterParams } from './params.js';

/** Rate limiters of the API, by name. */
export interface ApiLimiterSet {
  /** Waits on the named limiter; an unknown name (or limiting turned off) lets the request through at once. */
  wait(name: string, signal?: AbortSignal): Promise<LimitedRequest>;
  /** The limiter of a name, if there is one. */
  limiter(name: string): ApiLimiter | undefined;
  /** Every limiter name. */
  names(): string[];
  /** One report per finished or refused request (feeds the cellium_api_limiter_* metrics). */
  readonly reports$: Observable<LimiterReport>;
}

/** Token for the API limiter set. */
export const ApiLimiterSetToken = token<ApiLimiterSet>('ApiLimiterSet');

const UNLIMITED: LimitedRequest = { waitMs: 0, done: () => undefined };

/** The default ApiLimiterSet. */
export class ApiLimiters implements ApiLimiterSet {
  private readonly limiters = new Map<string, ApiLimiter>();
  private readonly subject = new Subject<LimiterReport>();
  /** See ApiLimiterSet. */
  readonly reports$: Observable<LimiterReport> = this.subject.asObservable();

  constructor(
    params: Readonly<Record<string, LimiterParams>>,
    private readonly enabled = true,
  ) {
    for (const [name, p] of Object.entries(params)) this.limiters.set(name, new ApiLimiter(name, p, (r) => this.subject.next(r)));
  }

  /** See ApiLimiterSet. */
  wait(name: string, signal?: AbortSignal): Promise<LimitedRequest> {
    const l = this.enabled ? this.limiters.get(name) : undefined;
    return l ? l.wait(signal) : Promise.resolve(UNLIMITED);
  }

  /** See ApiLimiterSet. */
  limiter(name: string): ApiLimiter | undefined {
    return this.limiters.get(name);
  }

  /** See ApiLimiterSet. */
  names(): string[] {
    return [...this.limiters.keys()].sort();
  }
}
