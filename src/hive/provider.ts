/**
 * How a cell's constructor becomes an inversify binding: a factory (or a class with explicit tokens)
 * is bound with `toResolvedValue(fn, tokens)`, so inversify resolves and passes its dependencies; a
 * class given without tokens is bound with `to(Class)` and inversify fills its constructor from the
 * class's own metadata (`@injectable()`, `@inject(Token)`, `@multiInject(GroupToken)`). Either way
 * the hive learns the dependencies, for its graph checks and introspection.
 */
import { ClassElementMetadataKind, getClassMetadata, type ClassElementMetadata } from '@inversifyjs/core';
import { LazyServiceIdentifier, type BindInFluentSyntax, type BindToFluentSyntax, type MapToResolvedValueInjectOptions, type ServiceIdentifier } from 'inversify';
import { callArgs, ctorName, isClass, type Ctor, type Injection } from './cell.js';
import { errorMessage, InjectableClassError } from './errors.js';
import type { Key } from './scope.js';
import { isGroupToken, isToken, type Token } from './token.js';

/** One dependency of a provider. */
export interface DepSpec {
  readonly key: Key;
  readonly multiple: boolean;
  readonly optional: boolean;
}

/** A provider ready to bind: its display name, its dependencies and how to bind it. */
export interface ProviderSpec {
  readonly name: string;
  readonly deps: readonly DepSpec[];
  readonly bind: (to: BindToFluentSyntax<unknown>) => BindInFluentSyntax<unknown>;
}

/** The spec of a provide/replace cell's constructor; `where` names it in errors. */
export function providerSpec(ctor: Ctor<unknown, readonly unknown[]>, deps: Injection, fallbackName: string, where: (name: string) => string): ProviderSpec {
  const name = ctorName(ctor, fallbackName);
  if (isClass(ctor) && deps.inject.length === 0 && !deps.names) return classSpec(ctor, name, where(name));
  const call = isClass(ctor)
    ? (args: readonly unknown[]) => new ctor(...callArgs(deps.names, args))
    : (args: readonly unknown[]) => (ctor as (...a: readonly unknown[]) => unknown)(...callArgs(deps.names, args));
  return resolvedSpec(name, deps.inject, call);
}

/** A provider inversify calls with the values of `tokens` (value groups as every member, possibly none). */
export function resolvedSpec(name: string, tokens: readonly Token<unknown>[], call: (args: readonly unknown[]) => unknown): ProviderSpec {
  const deps = tokens.map((t) => ({ key: t, multiple: isGroupToken(t), optional: false }));
  const options = tokens.map((t) => (isGroupToken(t) ? { serviceIdentifier: t, isMultiple: true as const, optional: true as const } : t));
  return {
    name,
    deps,
    bind: (to) => to.toResolvedValue((...args: unknown[]) => call(args), options as MapToResolvedValueInjectOptions<unknown[]>),
  };
}

/** A class inversify constructs from its own metadata. */
function classSpec(cls: new (...args: readonly unknown[]) => unknown, name: string, where: string): ProviderSpec {
  let elements: ClassElementMetadata[];
  try {
    const meta = getClassMetadata(cls);
    elements = [...meta.constructorArguments, ...meta.properties.values()];
  } catch (err) {
    throw new InjectableClassError(where, errorMessage(err).split('\n')[0]!);
  }
  const deps: DepSpec[] = [];
  elements.forEach((el, i) => {
    if (el.kind === ClassElementMetadataKind.unmanaged) return;
    const key = keyOf(el.value);
    const multiple = el.kind === ClassElementMetadataKind.multipleInjection;
    if (key.group && !multiple) {
      throw new InjectableClassError(where, `dependency #${i + 1} injects the value group ${key.name} with @inject; a group is injected with @multiInject(${key.name})`);
    }
    deps.push({ key, multiple, optional: el.optional });
  });
  return { name, deps, bind: (to) => to.to(cls) };
}

/** The key of a service identifier written in a class's metadata. */
function keyOf(value: ServiceIdentifier | LazyServiceIdentifier): Key {
  if (isToken(value)) return value;
  const id = LazyServiceIdentifier.is(value) ? value.unwrap() : value;
  const name = typeof id === 'symbol' ? (id.description ?? String(id)) : typeof id === 'function' ? id.name : id;
  return { id, name };
}
