import t from 'tap';
import {
  ApiLimiter, ApiLimiters, DEFAULT_LIMITS, RateLimitedError, parseApiRateLimit, parseRate, resolveLimits, type LimiterReport,
} from '../../src/cells/api-server/index.js';

t.test('Cilium syntax: entries start at NAME=, options follow comma separated', async (t) => {
  t.same(parseApiRateLimit('endpoint-create=rate-limit:10/s,rate-burst:20,max-parallel-requests:16,endpoint-get=rate-limit:5/m'), {
    'endpoint-create': 'rate-limit:10/s,rate-burst:20,max-parallel-requests:16',
    'endpoint-get': 'rate-limit:5/m',
  });
  t.same(parseApiRateLimit('{"endpoint-delete":"parallel-requests:8"}'), { 'endpoint-delete': 'parallel-requests:8' });
  t.same(parseApiRateLimit({ 'endpoint-list': 'rate-limit:2/s' }), { 'endpoint-list': 'rate-limit:2/s' });
  t.same(parseApiRateLimit(''), {});
  t.throws(() => parseApiRateLimit('rate-limit:10/s'), /comes before any API name/);
  t.throws(() => parseApiRateLimit('{bad json'), /not valid JSON/);
});

t.test('rates and options parse like Cilium, errors name the API and the option', async (t) => {
  t.equal(parseRate('10/s'), 10);
  t.equal(parseRate('30/m'), 0.5);
  t.equal(parseRate('1/2s'), 0.5);
  t.throws(() => parseRate('10'), /expected a rate/);
  t.throws(() => parseRate('10/10'), /needs a unit/);
  const p = resolveLimits(parseApiRateLimit('endpoint-create=rate-limit:10/s,rate-burst:20,max-parallel-requests:16,auto-adjust:false'));
  t.equal(p['endpoint-create']!.rateLimit, 10);
  t.equal(p['endpoint-create']!.rateBurst, 20);
  t.equal(p['endpoint-create']!.maxParallelRequests, 16);
  t.equal(p['endpoint-create']!.autoAdjust, false);
  t.equal(p['endpoint-create']!.parallelRequests, DEFAULT_LIMITS['endpoint-create']!.parallelRequests, 'defaults kept');
  t.same(Object.keys(p).sort(), ['endpoint-create', 'endpoint-delete', 'endpoint-get', 'endpoint-list', 'endpoint-patch']);
  t.throws(() => resolveLimits({ 'endpoint-get': 'rate-burst:many' }), /endpoint-get: option "rate-burst": expected a non-negative integer/);
  t.throws(() => resolveLimits({ 'endpoint-get': 'burst' }), /endpoint-get: "burst" is not option:value/);
  t.throws(() => resolveLimits({ 'endpoint-get': 'max-wait-duration:soon' }), /endpoint-get: option "max-wait-duration"/);
  t.ok(resolveLimits({ 'my-api': 'rate-limit:1/s' })['my-api'], 'APIs without defaults are created from the options');
});

const base = { ...DEFAULT_LIMITS['endpoint-create']!, autoAdjust: false, skipInitial: 0 };

t.test('token bucket: burst passes at once, then requests queue up to the max wait', async (t) => {
  const reports: LimiterReport[] = [];
  const l = new ApiLimiter('x', { ...base, rateLimit: 4, rateBurst: 2, parallelRequests: 0, maxWaitMs: 2000 }, (r) => reports.push(r));
  const a = await l.wait();
  const b = await l.wait();
  const c = await l.wait();
  t.ok(a.waitMs + b.waitMs < 5, 'burst of 2 without waiting');
  t.ok(c.waitMs >= 50, `third waited for a token (${c.waitMs.toFixed(1)} ms of ~250)`);
  for (const r of [a, b, c]) r.done(200);
  t.equal(reports.filter((r) => r.outcome === 'success').length, 3);
});

t.test('a wait beyond max-wait-duration is refused with a Retry-After', async (t) => {
  const reports: LimiterReport[] = [];
  const l = new ApiLimiter('endpoint-create', { ...base, rateLimit: 1 / 60, rateBurst: 1, parallelRequests: 0, maxWaitMs: 100 }, (r) => reports.push(r));
  (await l.wait()).done(201);
  const err = await l.wait().catch((e: unknown) => e);
  t.type(err, RateLimitedError);
  t.equal((err as RateLimitedError).retryAfterSec, 60);
  t.match((err as Error).message, /endpoint-create: request would have to wait (59\.9\d*|60(\.\d+)?)s to be served \(maximum wait duration: 100ms\)/);
  t.equal(reports.at(-1)?.outcome, 'rate-limited');
  t.equal(reports.at(-1)?.returnCode, 429);
  // the refused request did not consume a token: after cancelling, the bucket is as before
  t.equal(l.snapshot().inFlight, 0);
});

t.test('parallel requests: the cap queues the rest, which run as slots free up; past the max wait 429', async (t) => {
  const l = new ApiLimiter('p', { ...base, rateLimit: 0, parallelRequests: 2, maxWaitMs: 1000 });
  const a = await l.wait();
  const b = await l.wait();
  let cDone = false;
  const c = l.wait().then((r) => {
    cDone = true;
    return r;
  });
  await new Promise((r) => setTimeout(r, 20));
  t.equal(cDone, false, 'third waits for a slot');
  t.equal(l.snapshot().queued, 1);
  a.done(200);
  const cr = await c;
  t.equal(l.snapshot().inFlight, 2);
  const d = await l.wait().catch((e: unknown) => e);
  t.type(d, RateLimitedError, 'no slot within the max wait');
  t.match((d as Error).message, /timed out while waiting to be served with 2 parallel requests/);
  b.done(200);
  cr.done(200);
  t.equal(l.snapshot().inFlight, 0);
});

t.test('skip-initial lets the first requests through unlimited', async (t) => {
  const l = new ApiLimiter('s', { ...base, rateLimit: 1 / 60, rateBurst: 1, parallelRequests: 0, maxWaitMs: 10, skipInitial: 3 });
  for (let i = 0; i < 3; i++) (await l.wait()).done(200);
  (await l.wait()).done(200);
  await t.rejects(l.wait(), RateLimitedError);
});

t.test('auto-adjust opens the limits when processing is faster than estimated', async (t) => {
  const l = new ApiLimiter('a', { ...DEFAULT_LIMITS['endpoint-create']!, skipInitial: 0 });
  const before = l.snapshot();
  for (let i = 0; i < 4; i++) (await l.wait()).done(201);
  const after = l.snapshot();
  t.ok(after.limit > before.limit, `rate ${before.limit} -> ${after.limit}`);
  t.ok(after.burst > before.burst, `burst ${before.burst} -> ${after.burst}`);
  t.ok(after.parallelRequests >= before.parallelRequests);
  t.equal(after.adjustmentFactor, 100, 'clamped at max-adjustment-factor');
});

t.test('an aborted wait leaves the queue and the bucket', async (t) => {
  const l = new ApiLimiter('c', { ...base, rateLimit: 0, parallelRequests: 1, maxWaitMs: 0 });
  const a = await l.wait();
  const ac = new AbortController();
  const w = l.wait(ac.signal);
  ac.abort(new Error('client gone'));
  await t.rejects(w, /client gone/);
  t.equal(l.snapshot().queued, 0);
  a.done(200);
  t.equal(l.snapshot().inFlight, 0);
});

t.test('the set reports every request and lets unknown APIs through', async (t) => {
  const set = new ApiLimiters(resolveLimits({}));
  const seen: string[] = [];
  set.reports$.subscribe((r) => seen.push(`${r.name}:${r.outcome}`));
  (await set.wait('endpoint-get')).done(200);
  (await set.wait('endpoint-get')).done(404);
  (await set.wait('no-such-api')).done(200);
  t.same(seen, ['endpoint-get:success', 'endpoint-get:fail']);
  t.same(set.names(), ['endpoint-create', 'endpoint-delete', 'endpoint-get', 'endpoint-list', 'endpoint-patch']);
  const off = new ApiLimiters(resolveLimits({ 'endpoint-get': 'rate-limit:1/m,rate-burst:1,max-wait-duration:1ms,skip-initial:0' }), false);
  for (let i = 0; i < 3; i++) (await off.wait('endpoint-get')).done(200);
  t.pass('disabled set never limits');
});
