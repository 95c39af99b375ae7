/**
 * Every error the hive raises, in one place. Messages name the module, the cell and the fix,
 * the way NestJS's errors/messages.ts and cilium/hive's errors do.
 */
import { errorMessage } from '../lib/errors.js';

/** Base class of all hive errors. */
export class HiveError extends Error {
  override readonly name: string = 'HiveError';
}

/** A module id that does not follow hive's rules. */
export class InvalidModuleIdError extends HiveError {
  override readonly name = 'InvalidModuleIdError';
  constructor(readonly id: string) {
    super(
      `invalid module id "${id}": it must start with a lowercase letter and have 2-31 characters of a-z, 0-9, "_" or "-" (e.g. "endpoint-manager")`,
    );
  }
}

/** A dependency given to provide()/invoke() that is not a token (often an import cycle leaving it undefined). */
export class InvalidDependencyError extends HiveError {
  override readonly name = 'InvalidDependencyError';
  constructor(which: string, got: unknown) {
    super(
      `dependency ${which} is not a token but ${got === undefined ? 'undefined' : typeof got}; fix: pass tokens made by token() or groupToken() (undefined usually means an import cycle between the file that declares the token and this cell)`,
    );
  }
}

/** A class given to provide() without tokens whose inversify metadata cannot construct it. */
export class InjectableClassError extends HiveError {
  override readonly name = 'InjectableClassError';
  constructor(where: string, detail: string) {
    super(
      `${where} cannot be constructed by inversify: ${detail}\n  fix: decorate the class with @injectable() and every constructor parameter with @inject(Token) (or @multiInject(GroupToken)), or pass the tokens to provide(Token, Class, ...tokens)`,
    );
  }
}

/** A value-group token used where one value is meant (provide, providePrivate, replace, decorate). */
export class GroupTokenError extends HiveError {
  override readonly name = 'GroupTokenError';
  constructor(what: string, group: string, where: string) {
    super(
      `${what}(${group}) in ${where}: ${group} is a value group, not one value; fix: contribute members with provideInto(${group}, …), and let the cells that inject it see every member`,
    );
  }
}

/** A dependency that nothing visible provides. */
export class MissingDependencyError extends HiveError {
  override readonly name = 'MissingDependencyError';
  constructor(
    readonly missing: string,
    readonly path: readonly string[],
    readonly hint: string,
  ) {
    super(`missing dependency ${missing}\n  needed by: ${path.join(' -> ')} -> ${missing}\n  fix: ${hint}`);
  }
}

/** A dependency cycle between providers. */
export class DependencyCycleError extends HiveError {
  override readonly name = 'DependencyCycleError';
  constructor(readonly cycle: readonly string[]) {
    super(`dependency cycle: ${cycle.join(' -> ')}\n  fix: break the cycle, e.g. let one side subscribe to events or take a lazy getter`);
  }
}

/** A token provided twice in the same visible scope. */
export class DuplicateProviderError extends HiveError {
  override readonly name = 'DuplicateProviderError';
  constructor(
    readonly tokenName: string,
    readonly first: string,
    readonly second: string,
  ) {
    super(`${tokenName} is provided twice: by ${first} and by ${second}; remove one, or use replace()/decorate() to swap it`);
  }
}

/** A provider or invoke function that threw while being constructed or called. */
export class ConstructionError extends HiveError {
  override readonly name = 'ConstructionError';
  constructor(
    readonly where: string,
    override readonly cause: unknown,
  ) {
    super(`${where} failed: ${errorMessage(cause)}`);
  }
}

/** A bad configuration value, key or flag. */
export class ConfigError extends HiveError {
  override readonly name = 'ConfigError';
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

/** A start hook that failed or timed out; the hooks started before it were stopped again. */
export class StartError extends HiveError {
  override readonly name = 'StartError';
  constructor(
    readonly hook: string,
    override readonly cause: unknown,
    readonly rollbackErrors: readonly Error[],
  ) {
    super(
      `start failed in ${hook}: ${errorMessage(cause)}` +
        (rollbackErrors.length ? `\n  and while rolling back: ${rollbackErrors.map((e) => e.message).join('; ')}` : ''),
    );
  }
}

/** One or more stop hooks or jobs that failed; stopping went on past each of them. */
export class StopError extends HiveError {
  override readonly name = 'StopError';
  constructor(readonly errors: readonly Error[]) {
    super(`stop finished with ${errors.length} error(s):\n  ${errors.map((e) => e.message).join('\n  ')}`);
  }
}

/** A hook or job that did not finish within its time limit. */
export class TimeoutError extends HiveError {
  override readonly name = 'TimeoutError';
  constructor(what: string, ms: number) {
    super(`${what} timed out after ${ms} ms`);
  }
}

/** Hive used in the wrong order (e.g. start before populate). */
export class HiveStateError extends HiveError {
  override readonly name = 'HiveStateError';
}

// The message of any thrown value, any thrown value as an Error: src/lib's, re-exported for the hive's users.
export { errorMessage, toError } from '../lib/errors.js';
