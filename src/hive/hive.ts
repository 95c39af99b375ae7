/**
 * The hive: builds scopes from cells, checks the dependency graph, runs invokes (constructing only
 * what they need), then starts and stops the lifecycle, the jobs and the controllers.
 */
import 'reflect-metadata';
import { Container } from 'inversify';
import { buildTree, type BuiltTree } from './build.js';
import type { Cell } from './cell.js';
import { ConfigRegistry, type ConfigInputs } from './config/index.js';
import { ControllerManagerToken, Controllers } from './controller/manager.js';
import { ConstructionError, HiveStateError, MissingDependencyError, StopError, toError } from './errors.js';
import { checkGraph } from './graph.js';
import { HealthRegistry, HealthToken, HealthTreeToken } from './health.js';
import { hiveConfigCell, HiveConfigToken, type HiveConfig } from './builtins.js';
import { JobGroup, JobsToken } from './jobs.js';
import { LifecycleRunner, LifecycleToken, describeHook, type LifecycleTimeouts, type OwnedHook } from './lifecycle.js';
import { defaultLogger, LoggerToken, type Logger } from './logger.js';
import { label, type ProviderRecord, type Scope } from './scope.js';
import { ShutdownerToken, ShutdownSignal } from './shutdowner.js';
import { isGroupToken, type Token } from './token.js';

/** Options for a hive. */
export interface HiveOptions {
  /** Name of the root scope (default "agent"). */
  readonly name?: string;
  /** Root logger (default: pino JSON to stderr). */
  readonly logger?: Logger;
}

type HiveState = 'new' | 'populated' | 'starting' | 'started' | 'stopped';

/** A hive of cells. */
export class Hive {
  /** Every declared configuration flag. */
  readonly config = new ConfigRegistry();
  /** The hive's health tree. */
  readonly health = new HealthRegistry();
  /** The root logger. */
  readonly log: Logger;
  private readonly tree: BuiltTree;
  private readonly lifecycle = new LifecycleRunner();
  private readonly shutdownSignal = new ShutdownSignal();
  private readonly controllers = new Controllers();
  private readonly jobGroups: JobGroup[] = [];
  private readonly constructing: string[] = [];
  private readonly container = new Container();
  private state: HiveState = 'new';

  constructor(cells: readonly Cell[], opts: HiveOptions = {}) {
    this.log = opts.logger ?? defaultLogger();
    this.tree = buildTree(opts.name ?? 'agent', [hiveConfigCell, ...cells], this.config, (s) => this.initScope(s));
  }

  /** Resolves configuration (flags > env > file > defaults); returns positional arguments. */
  configure(inputs: ConfigInputs): string[] {
    if (this.state !== 'new') throw new HiveStateError('configure() must be called before populate()');
    return this.config.resolve(inputs);
  }

  /** Checks the graph and runs every invoke, constructing what they need. Idempotent. */
  populate(): void {
    if (this.state !== 'new') return;
    checkGraph(this.tree.root, this.tree.invokes, this.tree.groups);
    for (const inv of this.tree.invokes) {
      const where = `invoke "${inv.cell.name}" (module ${inv.scope.module.id})`;
      this.constructing.push(inv.cell.name);
      try {
        const args = inv.cell.inject.map((token) => this.resolve({ token, scope: inv.scope }));
        inv.cell.fn(...args);
      } catch (err) {
        throw new ConstructionError(where, err);
      } finally {
        this.constructing.pop();
      }
    }
    this.state = 'populated';
  }

  /** The value of a token as seen from the root (populates first). For tests and tools. */
  get<T>(token: Token<T>): T {
    this.populate();
    return this.resolve({ token, scope: this.tree.root }) as T;
  }

  /** Starts every hook in dependency order, then the jobs. On failure, rolls back and throws StartError. */
  async start(): Promise<void> {
    this.populate();
    if (this.state !== 'populated') throw new HiveStateError(`cannot start a hive that is ${this.state}`);
    this.state = 'starting';
    const began = performance.now();
    await this.lifecycle.start(this.timeouts(), (h, phase) => this.logHook(h, phase));
    for (const g of this.jobGroups) g.start();
    this.state = 'started';
    this.log.info({ durationMs: Math.round(performance.now() - began), hooks: this.lifecycle.list().length }, 'hive started');
  }

  /** Stops the jobs, then every stop hook in reverse, then the controllers; throws StopError with every failure. */
  async stop(): Promise<void> {
    if (this.state !== 'started') return;
    this.state = 'stopped';
    const errors: Error[] = [];
    for (const g of [...this.jobGroups].reverse()) await g.stop().catch((e: unknown) => errors.push(toError(e)));
    try {
      await this.lifecycle.stop(this.timeouts(), (h, phase) => this.logHook(h, phase), errors);
    } finally {
      await this.controllers.removeAll();
    }
    this.log.info('hive stopped');
  }

  /**
   * Starts, waits for SIGINT/SIGTERM or a Shutdowner request, stops. Resolves with the error that
   * ended the run (a start failure, a shutdown error or stop errors), or undefined for a clean stop.
   */
  async run(signals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): Promise<Error | undefined> {
    try {
      await this.start();
    } catch (err) {
      return toError(err);
    }
    const onSignal = (sig: NodeJS.Signals): void => {
      if (this.shutdownSignal.isRequested) this.log.warn({ signal: sig }, 'signal received while stopping; still stopping');
      else this.log.info({ signal: sig }, 'signal received, stopping');
      this.shutdownSignal.shutdown();
    };
    for (const s of signals) process.on(s, onSignal);
    // run() is the program's main loop: stay alive until asked to stop, even with no open handles
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const reason = await this.shutdownSignal.requestedPromise;
    clearInterval(keepAlive);
    try {
      await this.stop();
    } catch (err) {
      return reason ?? (err as StopError);
    } finally {
      for (const s of signals) process.off(s, onSignal);
    }
    return reason;
  }

  /** Requests shutdown (same as the Shutdowner a cell gets). */
  shutdown(err?: Error): void {
    this.shutdownSignal.shutdown(err);
  }

  /** The built scopes and records, for introspection. */
  get built(): BuiltTree {
    return this.tree;
  }

  /** Every hook in start order. */
  hooks(): readonly OwnedHook[] {
    return this.lifecycle.list();
  }

  /** Every job, as "module: name". */
  jobs(): string[] {
    return this.jobGroups.flatMap((g) => g.names().map((n) => `${g.module}: ${n}`));
  }

  private timeouts(): LifecycleTimeouts {
    const c = this.get(HiveConfigToken) as HiveConfig;
    return { hookMs: c.hiveHookTimeout, startMs: c.hiveStartTimeout, stopMs: c.hiveStopTimeout };
  }

  private logHook(h: OwnedHook, phase: 'start' | 'stop'): void {
    this.log.debug({ module: h.module, cell: h.cell, hook: h.hook.name }, `${phase} hook: ${describeHook(h)}`);
  }

  private resolve(dep: { token: Token<unknown>; scope: Scope }): unknown {
    if (isGroupToken(dep.token)) return (this.tree.groups.get(dep.token.id) ?? []).map((r) => this.serve(r));
    const rec = dep.scope.lookup(dep.token);
    if (!rec) throw new MissingDependencyError(dep.token.name, [dep.scope.id], `provide ${dep.token.name} in module ${dep.scope.module.id} or above`);
    return this.serve(rec);
  }

  /**
   * The value of a record from the hive's inversify container. The scope lookup decides which record
   * a token means; each record is bound under its own service id on first use (unused providers
   * cost nothing) and inversify constructs it once.
   */
  private serve(rec: ProviderRecord): unknown {
    if (!rec.serviceId) {
      rec.serviceId = Symbol(label(rec));
      this.container.bind(rec.serviceId).toDynamicValue(() => this.construct(rec)).inSingletonScope();
    }
    return this.container.get(rec.serviceId);
  }

  private construct(rec: ProviderRecord): unknown {
    if (rec.constructed) return rec.value;
    this.constructing.push(rec.name);
    try {
      const args = rec.deps.map((d) => this.resolve(d));
      rec.value = rec.build(args);
      rec.constructed = true;
      return rec.value;
    } catch (err) {
      if (err instanceof ConstructionError) throw err;
      throw new ConstructionError(`constructing ${label(rec)}`, err);
    } finally {
      this.constructing.pop();
    }
  }

  /** Adds the per-module built-ins (and, at the root, the hive-wide ones) to a scope. */
  private initScope(scope: Scope): void {
    const builtin = <T>(token: Token<T>, build: () => T): void => {
      scope.local.set(token.id, { kind: 'builtin', token, name: token.name, scope, deps: [], build, constructed: false });
    };
    const moduleId = scope.id;
    const log = (): Logger => (scope.path.length ? this.log.child({ module: moduleId }) : this.log);
    builtin(LoggerToken, log);
    builtin(HealthToken, () => this.health.scopeAt(scope.path));
    builtin(LifecycleToken, () => ({ append: (hook) => this.lifecycle.add(hook, moduleId, this.constructing.at(-1) ?? moduleId) }));
    builtin(JobsToken, () => {
      const g = new JobGroup(moduleId, this.health.scopeAt(scope.path), log(), this.shutdownSignal);
      this.jobGroups.push(g);
      if (this.state === 'started') g.start();
      return g;
    });
    if (scope.path.length === 0) {
      builtin(ShutdownerToken, () => this.shutdownSignal);
      builtin(HealthTreeToken, () => this.health);
      builtin(ControllerManagerToken, () => this.controllers);
    }
  }
}
