import t from 'tap';
import {
  Hive, module, provide, providePrivate, provideInto, invoke, group, decorate, replace, token, groupToken,
  LifecycleToken, type Lifecycle, InvalidModuleIdError, MissingDependencyError, DependencyCycleError, silentLogger,
  DuplicateProviderError, testHive,
} from '../../src/hive/index.js';

interface Greeter { greet(): string }
const Name = token<string>('Name');
const GreeterT = token<Greeter>('Greeter');

const newHive = (...cells: Parameters<typeof group>) => new Hive(cells, { logger: silentLogger() });

t.test('module ids are checked like hive', async (t) => {
  for (const bad of ['A', 'x', '1abc', 'has space', 'a'.repeat(32), 'Abc']) {
    t.throws(() => module(bad, 'bad'), InvalidModuleIdError, bad);
  }
  for (const good of ['ab', 'endpoint-manager', 'ipam_v4', 'a'.repeat(31)]) t.doesNotThrow(() => module(good, 'ok'));
  t.throws(() => module('X', 'x'), /lowercase letter/);
});

t.test('providers are lazy: constructed only when an invoke needs them', async (t) => {
  const built: string[] = [];
  class Used { constructor() { built.push('used'); } }
  class Unused { constructor() { built.push('unused'); } }
  const UsedT = token<Used>('Used');
  const UnusedT = token<Unused>('Unused');
  const h = newHive(provide(UsedT, Used), provide(UnusedT, Unused), invoke('use', (_u: Used) => undefined, UsedT));
  h.populate();
  t.same(built, ['used']);
});

t.test('classes and factories receive their injected tokens in order', async (t) => {
  class Hello implements Greeter { constructor(private readonly name: string) {} greet() { return `hello ${this.name}`; } }
  let got = '';
  const h = newHive(
    provide(Name, () => 'world'),
    provide(GreeterT, Hello, Name),
    invoke('greet', (g: Greeter) => { got = g.greet(); }, GreeterT),
  );
  h.populate();
  t.equal(got, 'hello world');
});

t.test('private providers are visible inside their module and sub-modules only', async (t) => {
  const Secret = token<string>('Secret');
  const Inner = token<string>('Inner');
  const cells = module('outer', 'Outer',
    providePrivate(Secret, () => 's3cret'),
    module('inner', 'Inner', provide(Inner, (s: string) => `inner sees ${s}`, Secret)),
  );
  const h1 = newHive(cells, invoke('read', (v: string) => t.equal(v, 'inner sees s3cret'), Inner));
  h1.populate();
  const h2 = newHive(cells, invoke('peek', (_s: string) => undefined, Secret));
  t.throws(() => h2.populate(), MissingDependencyError);
  t.throws(() => newHive(cells, invoke('peek', (_s: string) => undefined, Secret)).populate(), /provided privately in module outer/);
});

t.test('decorate swaps a dependency for the cells inside only', async (t) => {
  const seen: string[] = [];
  const A = token<string>('A');
  const B = token<string>('B');
  const h = newHive(
    provide(Name, () => 'plain'),
    module('deco', 'Decorated', decorate(Name, (n: string) => `${n}+decorated`, [], provide(A, (n: string) => n, Name))),
    module('plain', 'Plain', provide(B, (n: string) => n, Name)),
    invoke('read', (a: string, b: string) => seen.push(a, b), A, B),
  );
  h.populate();
  t.same(seen, ['plain+decorated', 'plain']);
});

t.test('replace swaps a provider for the whole hive (mocks)', async (t) => {
  let got = '';
  const h = newHive(
    module('mm', 'M', providePrivate(Name, () => 'real'), provide(GreeterT, (n: string) => ({ greet: () => n }), Name)),
    replace(Name, 'mock'),
    invoke('greet', (g: Greeter) => { got = g.greet(); }, GreeterT),
  );
  h.populate();
  t.equal(got, 'mock');
});

t.test('value groups collect every member', async (t) => {
  const Handlers = groupToken<string>('Handlers');
  let got: readonly string[] = [];
  const h = newHive(
    module('one', 'One', provideInto(Handlers, () => 'a')),
    module('two', 'Two', provideInto(Handlers, () => 'b')),
    invoke('all', (hs: readonly string[]) => { got = hs; }, Handlers),
  );
  h.populate();
  t.same(got, ['a', 'b']);
});

t.test('a missing dependency names the whole path and where to provide it', async (t) => {
  const Missing = token<number>('EndpointManager');
  const Api = token<string>('EndpointAPIManager');
  const h = newHive(
    module('endpoint-api', 'Endpoint API', provide(Api, (n: number) => String(n), Missing)),
    module('server', 'Server', invoke('serve', (_a: string) => undefined, Api)),
  );
  const err = t.throws(() => h.populate(), MissingDependencyError) as unknown as MissingDependencyError;
  t.match(err.message, /missing dependency EndpointManager/);
  t.match(err.message, /invoke "serve" \(module server\) -> .*EndpointAPIManager.*\(module endpoint-api\) -> EndpointManager/);
  t.match(err.message, /provide\(EndpointManager/);
});

t.test('a cycle names every member', async (t) => {
  const A = token<string>('A'); const B = token<string>('B'); const C = token<string>('C');
  const h = newHive(
    provide(A, (b: string) => b, B), provide(B, (c: string) => c, C), provide(C, (a: string) => a, A),
    invoke('x', (_a: string) => undefined, A),
  );
  const err = t.throws(() => h.populate(), DependencyCycleError) as unknown as DependencyCycleError;
  t.equal(err.cycle.length, 4);
  t.match(err.message, /A.* -> B.* -> C.* -> A/);
});

t.test('a token provided twice is an error naming both', async (t) => {
  t.throws(() => newHive(module('aa', 'A', provide(Name, () => 'a')), module('bb', 'B', provide(Name, () => 'b'))), DuplicateProviderError);
  t.throws(() => newHive(module('aa', 'A', provide(Name, () => 'a')), module('bb', 'B', provide(Name, () => 'b'))), /module aa.*module bb/);
});

t.test('a throwing constructor is reported with the invoke and the provider', async (t) => {
  const h = newHive(provide(Name, () => { throw new Error('boom'); }), invoke('use-name', (_n: string) => undefined, Name));
  t.throws(() => h.populate(), /invoke "use-name".*constructing Name.*boom/s);
});

t.test('testHive starts the cells and stops them at the end of the test', async (t) => {
  const events: string[] = [];
  const Svc = token<{ ok: boolean }>('Svc');
  const cell = module('svc', 'Service', provide(Svc, (lc: Lifecycle) => {
    lc.append({ onStart: () => { events.push('start'); }, onStop: () => { events.push('stop'); } });
    return { ok: true };
  }, LifecycleToken), invoke('svc', (_s: { ok: boolean }) => undefined, Svc));
  await t.test('inner', async (t) => {
    const h = await testHive(t, [cell]);
    t.equal(h.get(Svc).ok, true);
    t.same(events, ['start']);
  });
  t.same(events, ['start', 'stop']);
});
