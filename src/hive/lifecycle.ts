/**
 * Lifecycle: start hooks run in the order they were appended (which is dependency order, since a
 * provider appends its hooks when it is constructed, after its dependencies), stop hooks in reverse.
 * A failed start stops what already started, in reverse; stop goes on past errors.
 */
import { HiveStateError, StartError, StopError, toError } from './errors.js';
import { withTimeout } from './timeout.js';
import { token } from './token.js';

/** What a hook receives: a signal that aborts when the hook's time is up. */
export interface HookContext {
  readonly signal: AbortSignal;
}

/** A start/stop hook pair. */
export interface Hook {
  /** Name shown in errors and introspection (defaults to the cell's name). */
  readonly name?: string;
  /** This hook's own time limit in ms (defaults to the hive's hook timeout). */
  readonly timeout?: number;
  onStart?(ctx: HookContext): void | Promise<void>;
  onStop?(ctx: HookContext): void | Promise<void>;
}

/** Appends hooks; injected per module so each hook knows its module and cell. */
export interface Lifecycle {
  append(hook: Hook): void;
}

/** Token for the module's Lifecycle. */
export const LifecycleToken = token<Lifecycle>('Lifecycle');

/** A hook with where it came from. */
export interface OwnedHook {
  readonly hook: Hook;
  readonly module: string;
  readonly cell: string;
}

/** Time limits for starting and stopping. */
export interface LifecycleTimeouts {
  readonly hookMs: number;
  readonly startMs: number;
  readonly stopMs: number;
}

/** A description of a hook: `module "m" cell "C" hook "h"`. */
export function describeHook(h: OwnedHook): string {
  return `module "${h.module}" cell "${h.cell}" hook "${h.hook.name ?? h.cell}"`;
}

/** Runs the hooks. */
export class LifecycleRunner {
  private readonly hooks: OwnedHook[] = [];
  private started: OwnedHook[] = [];
  /** Set once every start hook ran: a hook appended later would never start. */
  private closed = false;

  /**
   * Appends a hook owned by `module`/`cell`. After the start, a stop-only hook joins the started
   * ones (it runs at stop); a start hook throws, since it would never run.
   */
  add(hook: Hook, module: string, cell: string): void {
    const h = { hook, module, cell };
    if (this.closed && hook.onStart) {
      throw new HiveStateError(
        `${describeHook(h)} was appended after the hive started, so it would never start; fix: construct ${cell} before start() (invoke it, or get it before hive.start())`,
      );
    }
    this.hooks.push(h);
    if (this.closed) this.started.push(h);
  }

  /** Every hook in start order. */
  list(): readonly OwnedHook[] {
    return this.hooks;
  }

  /** Starts every hook in order; on failure stops the started ones in reverse and throws StartError. */
  async start(t: LifecycleTimeouts, onHook?: (h: OwnedHook, phase: 'start' | 'stop') => void): Promise<void> {
    const deadline = Date.now() + t.startMs;
    for (const h of this.hooks) {
      if (h.hook.onStart) {
        onHook?.(h, 'start');
        const ms = Math.max(1, Math.min(h.hook.timeout ?? t.hookMs, deadline - Date.now()));
        try {
          await withTimeout(`start of ${describeHook(h)}`, ms, (signal) => h.hook.onStart!({ signal }));
        } catch (err) {
          const rollback = await this.stopStarted(t, onHook);
          throw new StartError(describeHook(h), err, rollback);
        }
      }
      this.started.push(h);
    }
    this.closed = true;
  }

  /** Stops started hooks in reverse; returns errors instead of throwing. */
  private async stopStarted(t: LifecycleTimeouts, onHook?: (h: OwnedHook, phase: 'start' | 'stop') => void): Promise<Error[]> {
    const errors: Error[] = [];
    const deadline = Date.now() + t.stopMs;
    for (const h of this.started.reverse()) {
      if (!h.hook.onStop) continue;
      onHook?.(h, 'stop');
      const ms = Math.max(1, Math.min(h.hook.timeout ?? t.hookMs, deadline - Date.now()));
      try {
        await withTimeout(`stop of ${describeHook(h)}`, ms, (signal) => h.hook.onStop!({ signal }));
      } catch (err) {
        const e = toError(err);
        errors.push(e.message.includes(describeHook(h)) ? e : new Error(`stop of ${describeHook(h)}: ${e.message}`));
      }
    }
    this.started = [];
    return errors;
  }

  /** Stops every started hook in reverse, going on past errors; throws StopError listing all of them. */
  async stop(t: LifecycleTimeouts, onHook?: (h: OwnedHook, phase: 'start' | 'stop') => void, earlier: Error[] = []): Promise<void> {
    const errors = [...earlier, ...(await this.stopStarted(t, onHook))];
    if (errors.length) throw new StopError(errors);
  }
}
