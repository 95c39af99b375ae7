/**
 * The hive: builds scopes from cells and binds them into inversify containers (a module is a child
 * container), checks the dependency graph, runs invokes (inversify constructs only what they need,
 * once), then starts and stops the lifecycle, the jobs and the controllers.
 */
import 'reflect-metadata';
import { Container, ContainerModule } from 'inversify';
import { bindScopes, getFrom } from './bind.js';
import { buildTree, type BuiltTree } from './build.js';
import { callArgs, type Cell } from './cell.js';
import { ConfigRegistry, type ConfigInputs } from './config/index.js';
import { ControllerManagerToken, Controllers } from './controller/manager.js';
import { ConstructionError, DependencyCycleError, HiveStateError, MissingDependencyError, StopError, toError } from './errors.js';
import { checkDeps, checkGraph, invokeLabel } from './graph.js';
import { HealthRegistry, HealthToken, HealthTreeToken } from './health.js';
import { hiveConfigCell, HiveConfigToken, type HiveConfig } from './builtins.js';
import { JobGroup, JobsToken } from './jobs.js';
import { LifecycleRunner, LifecycleToken, describeHook, type Lifecycle, type LifecycleTimeouts, type OwnedHook } from './lifecycle.js';
import { defaultLogger, LoggerToken, type Logger } from './logger.js';
import { label, type ProviderRecord, type Scope } from './scope.js';
import { ShutdownerToken, ShutdownSignal } from './shutdowner.js';
import { isGroupToken, type Token } from './token.js';

/** Bound in a hive's root container: a second hive must not share its built-ins. */
const HIVE_MARK = Symbol.for('cellium/hive/hive');

/** Options for a hive. */
export interface HiveOptions {
  /** Name of the root scope (default "agent"). */
  readonly name?: string;
  /** Root logger (default: pino JSON to stderr). */
  readonly logger?: Logger;
  /**
   * An inversify container of another tool to bind the cells into (default: a container of the
   * hive's own). Its bindings satisfy the cells' dependencies (and replace the hive's built-ins, like
   * replace()); the cells' public providers become resolvable from it.
   */
  readonly container?: Container;
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
  /** What is being constructed (or invoked), innermost last: the Lifecycle it injects owns its hooks. */
  private readonly constructing: { readonly module: string; readonly cell: string }[] = [];
  private state: HiveState = 'new';
  /** The root inversify container: the hive's own, or the host's given in the options. */
  readonly container: Container;

  constructor(cells: readonly Cell[], opts: HiveOptions = {}) {
    this.log = opts.logger ?? defaultLogger();
    this.container = opts.container ?? new Container();
    const host = opts.container;
    if (host?.isBound(HIVE_MARK)) {
      throw new HiveStateError(
        'this container (or a parent of it) already holds the cells of a hive, whose built-ins (Lifecycle, Jobs, Health, Logger) the new cells would share; fix: load all the cells in one loadCells() call, or give each hive a container of its own',
      );
    }
    this.tree = buildTree(opts.name ?? 'agent', [hiveConfigCell, ...cells], this.config, (s, builtin) => this.initScope(s, builtin), host && ((id) => host.isBound(id)));
    bindScopes(this.tree, this.container, (r) => this.serve(r));
    this.container.bind(HIVE_MARK).toConstantValue(this);
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
      this.constructing.push({ module: inv.scope.module.id, cell: inv.cell.name });
      try {
        const args = inv.cell.inject.map((t) => getFrom(inv.scope.container, t));
        inv.cell.fn(...callArgs(inv.cell.names, args));
      } catch (err) {
        throw new ConstructionError(invokeLabel(inv), err);
      } finally {
        this.constructing.pop();
      }
    }
    this.state = 'populated';
  }

  /** The value of a token as seen from the root (populates first). For tests and tools. */
  get<T>(token: Token<T>): T {
    this.populate();
    checkDeps(this.tree.root, this.tree.groups, [{ deps: [{ token, scope: this.tree.root, multiple: isGroupToken(token), optional: false }], path: 'hive.get()' }]);
    return getFrom(this.container, token) as T;
  }

  /**
   * A ContainerModule binding every public provider of the cells (and every value-group member)
   * into the container that loads it; resolving one constructs it in this hive. The cells keep
   * resolving their own dependencies in this hive; start and stop it as usual.
   */
  toContainerModule(): ContainerModule {
    const exported = this.tree.records.filter((r) => r.visibleIn === this.tree.root);
    return new ContainerModule(({ bind }) => {
      for (const r of exported) bind(r.token.id).toDynamicValue(() => this.serve(r)).inSingletonScope();
    });
  }

  /** Starts every hook in dependency order, then the jobs. On failure, rolls back and throws StartError. */
  async start(): Promise<void> {
    this.populate();
    if (this.state !== 'populated') throw new HiveStateError(`cannot start a hive that is ${this.state}`);
    this.state = 'starting';
    const began = performance.now();
    try {
      await this.lifecycle.start(this.timeouts(), (h, phase) => this.logHook(h, phase));
    } catch (err) {
      // jobs never started; what immediate observers subscribed at construction ends here
      for (const g of this.jobGroups) await g.stop().catch(() => undefined);
      throw err;
    }
    for (const g of this.jobGroups) g.start();
    this.state = 'started';
    this.log.info({ durationMs: Math.round(performance.now() - began), hooks: this.lifecycle.list().length }, 'hive started');
  }

  /** Stops the jobs, then every stop hook in reverse, then the controllers; throws StopError with every failure. */
  async stop(): Promise<void> {
    if (this.state !== 'started') return;
    this.state = 'stopped';
    // cells see the stop begin (Shutdowner.stopping) before any of them is stopped
    this.shutdownSignal.shutdown();
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

  /**
   * A record's value, from the container of the scope that declared it (inversify constructs it
   * once and resolves its dependencies there). Names what is being constructed for the hooks it
   * appends and for errors; asked from outside (hive.get(), a host container), checks its graph first.
   */
  private serve(r: ProviderRecord): unknown {
    if (this.constructing.length === 0) checkDeps(this.tree.root, this.tree.groups, [{ deps: r.deps, path: label(r) }]);
    this.constructing.push({ module: r.scope.module.id, cell: r.name });
    try {
      const value = r.scope.container.get(r.serviceId);
      r.constructed = true;
      return value;
    } catch (err) {
      if (err instanceof ConstructionError || err instanceof MissingDependencyError || err instanceof DependencyCycleError) throw err;
      throw new ConstructionError(`constructing ${label(r)}`, err);
    } finally {
      this.constructing.pop();
    }
  }

  /**
   * Adds the per-module built-ins (Logger, Health, Jobs) to a scope and, at the root, the hive-wide
   * ones and the Lifecycle: one per provider that injects it (resolved while that provider is being
   * constructed), so every hook it appends, now or later, is owned by its module and cell.
   */
  private initScope(scope: Scope, builtin: <T>(token: Token<T>, make: () => T, transient?: boolean) => void): void {
    const moduleId = scope.id;
    const log = (): Logger => (scope.path.length ? this.log.child({ module: moduleId }) : this.log);
    builtin(LoggerToken, log);
    builtin(HealthToken, () => this.health.scopeAt(scope.path));
    builtin(JobsToken, () => {
      const g = new JobGroup(moduleId, this.health.scopeAt(scope.path), log(), this.shutdownSignal);
      this.jobGroups.push(g);
      if (this.state === 'started') g.start();
      return g;
    });
    if (scope.path.length === 0) {
      const lifecycle = (): Lifecycle => {
        const owner = this.constructing.at(-1) ?? { module: moduleId, cell: moduleId };
        return { append: (hook) => this.lifecycle.add(hook, owner.module, owner.cell) };
      };
      builtin(LifecycleToken, lifecycle, true);
      builtin(ShutdownerToken, () => this.shutdownSignal);
      builtin(HealthTreeToken, () => this.health);
      builtin(ControllerManagerToken, () => this.controllers);
    }
  }
}

/**
 * Binds `cells` into an inversify container of another tool and returns their hive: the container's
 * own bindings satisfy what the cells need, and the cells' public providers resolve from it
 * (`container.get(IPAMToken.id)`). Configure, then start and stop the hive as usual; resolve what
 * the tool needs before start() so that its start hooks run.
 */
export function loadCells(container: Container, cells: readonly Cell[], opts: Omit<HiveOptions, 'container'> = {}): Hive {
  return new Hive(cells, { ...opts, container });
}
