/**
 * Testing helpers: testHive builds a hive from chosen cells with replacements (mocks), starts it
 * inside a test (tap's or node:test's) and stops it when the test ends; testLifecycle is a
 * Lifecycle for constructing one object without a hive (cilium/hive's hivetest.Lifecycle).
 */
import { replace, type Cell } from './cell.js';
import type { ConfigInputs } from './config/registry.js';
import { StopError, toError } from './errors.js';
import { Hive } from './hive.js';
import { describeHook, type Hook, type Lifecycle } from './lifecycle.js';
import { silentLogger, type Logger } from './logger.js';
import { withTimeout } from './timeout.js';
import type { Token } from './token.js';

/** The part of a tap test the helper needs. */
export interface TestLike {
  teardown(fn: () => unknown): void;
}

/** The part of a node:test test context the helper needs (`test('…', async (t) => testHive(t, …))`). */
export interface NodeTestLike {
  after(fn: () => unknown): void;
}

/** Runs `fn` when the test `t` (tap's or node:test's) ends. */
export function onTestEnd(t: TestLike | NodeTestLike, fn: () => unknown): void {
  if ('teardown' in t) t.teardown(fn);
  else t.after(fn);
}

/** A replacement: a token and the value (mock) that stands in for its provider. */
export type Replacement = readonly [Token<unknown>, unknown];

/** Options for testHive. */
export interface TestHiveOptions {
  /** Tokens to replace with mocks: `[[EndpointManagerToken, mockManager]]`. */
  readonly replace?: readonly Replacement[];
  /** Configuration values by flag name: `{ 'endpoint-gc-interval': '1s' }`, or full inputs. */
  readonly config?: Readonly<Record<string, unknown>> | ConfigInputs;
  /** Start the hive (default true). */
  readonly start?: boolean;
  /** Logger (default silent). */
  readonly logger?: Logger;
}

/** A started (or populated) hive plus a typed getter. */
export interface TestHive {
  readonly hive: Hive;
  get<T>(token: Token<T>): T;
}

/** Builds, configures and starts a hive from `cells`; stops it at the end of the test `t` (tap or node:test). */
export async function testHive(t: TestLike | NodeTestLike, cells: readonly Cell[], opts: TestHiveOptions = {}): Promise<TestHive> {
  const replacements = (opts.replace ?? []).map(([tok, value]) => replace(tok, value));
  const hive = new Hive([...cells, ...replacements], { name: 'test', logger: opts.logger ?? silentLogger() });
  const cfg = opts.config ?? {};
  const isInputs = 'argv' in cfg || 'env' in cfg || 'file' in cfg || 'values' in cfg;
  hive.configure(isInputs ? (cfg as ConfigInputs) : { values: cfg as Record<string, unknown> });
  hive.populate();
  if (opts.start !== false) {
    await hive.start();
    onTestEnd(t, () => hive.stop());
  }
  return { hive, get: (token) => hive.get(token) };
}

/** A Lifecycle for tests without a hive; `ready()` settles once every start hook appended so far ran. */
export interface TestLifecycle extends Lifecycle {
  /** Resolves when the start hooks appended so far have run; rejects with the first that failed. */
  ready(): Promise<void>;
}

/**
 * A Lifecycle that runs each start hook as soon as it is appended (in order, one at a time) and
 * runs the stop hooks of the started ones in reverse when the test `t` (tap's or node:test's)
 * ends. A failed start fails `ready()` and the test's teardown, and no later start hook runs.
 * Hooks get the hive's default hook time limit (1 minute) unless they set their own.
 */
export function testLifecycle(t: TestLike | NodeTestLike): TestLifecycle {
  const started: Hook[] = [];
  let chain: Promise<void> = Promise.resolve();
  let failure: unknown;
  const name = (hook: Hook): string => describeHook({ hook, module: 'test', cell: hook.name ?? 'hook' });
  onTestEnd(t, async () => {
    await chain;
    const errors: Error[] = [];
    for (const hook of started.reverse()) {
      if (!hook.onStop) continue;
      await withTimeout(`stop of ${name(hook)}`, hook.timeout ?? 60_000, (signal) => hook.onStop!({ signal })).catch((e: unknown) => errors.push(toError(e)));
    }
    if (failure !== undefined) throw failure;
    if (errors.length) throw new StopError(errors);
  });
  return {
    append(hook: Hook): void {
      chain = chain.then(async () => {
        if (failure !== undefined) return;
        try {
          if (hook.onStart) await withTimeout(`start of ${name(hook)}`, hook.timeout ?? 60_000, (signal) => hook.onStart!({ signal }));
          started.push(hook);
        } catch (err) {
          failure = err;
        }
      });
    },
    ready: () => chain.then(() => (failure === undefined ? undefined : Promise.reject(failure))),
  };
}
