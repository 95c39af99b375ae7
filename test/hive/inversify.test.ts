import 'reflect-metadata';
import t from 'tap';
import {
  Hive, Container, module, provide, providePrivate, provideInto, invoke, decorate, replace, token, groupToken, injectable, inject,
  multiInject, optional, loadCells, silentLogger, LifecycleToken, LoggerToken, type Lifecycle, type Logger, MissingDependencyError,
  DependencyCycleError, DuplicateProviderError, InjectableClassError, InvalidDependencyError, HiveStateError, ConstructionError,
  testLifecycle, testHive,
} from '../../src/hive/index.js';

const Name = token<string>('Name');
const Greeting = token<string>('Greeting');
const Plugins = groupToken<string>('Plugins');
const newHive = (cells: Parameters<typeof module>[2][], opts: { container?: Container } = {}) => new Hive(cells, { logger: silentLogger(), ...opts });

t.test('a module is a child container: private providers are bound in it, public ones at the root', async (t) => {
  const Secret = token<string>('Secret');
  const h = newHive([module('outer', 'Outer', providePrivate(Secret, () => 's3cret'), provide(Greeting, (s: string) => `hi ${s}`, Secret))]);
  t.equal(h.get(Greeting), 'hi s3cret');
  t.ok(h.container.isBound(Greeting.id), 'the public token resolves from the root container');
  t.notOk(h.container.isBound(Secret.id), 'the private one does not');
  t.throws(() => h.get(Secret), /provided privately in module outer/);
});

t.test('a provider resolves its dependencies from its own module, whoever asks for it, and is constructed once', async (t) => {
  let built = 0;
  const seen: string[] = [];
  const A = token<string>('A');
  const h = newHive([
    provide(Name, () => 'plain'),
    module('owner', 'Owner', provide(Greeting, (n: string) => { built++; return `hello ${n}`; }, Name)),
    // a decoration of Name around the consumer must not leak into Greeting, which lives elsewhere
    module('user', 'User', decorate(Name, (n: string) => `${n}+decorated`, [], provide(A, (g: string, n: string) => `${g} / ${n}`, Greeting, Name))),
    invoke('read', (a: string, g: string) => { seen.push(a, g); }, A, Greeting),
  ]);
  h.populate();
  t.same(seen, ['hello plain / plain+decorated', 'hello plain']);
  t.equal(built, 1, 'one singleton, kept by inversify');
});

t.test('@injectable classes with @inject(Token) parameters are providers; inversify fills them', async (t) => {
  @injectable()
  class Greeter {
    constructor(
      @inject(Name) readonly name: string,
      @multiInject(Plugins) readonly plugins: readonly string[],
      @inject(LifecycleToken) lc: Lifecycle,
      @inject(LoggerToken) readonly log: Logger,
    ) {
      lc.append({ name: 'greeter', onStart: () => undefined });
    }
    greet(): string {
      return `hello ${this.name} with ${this.plugins.join('+')}`;
    }
  }
  const GreeterT = token<Greeter>('Greeter');
  const h = newHive([
    provide(Name, () => 'world'),
    module('pa', 'A', provideInto(Plugins, () => 'a')),
    module('pb', 'B', provideInto(Plugins, () => 'b')),
    module('greeter', 'Greeter', provide(GreeterT, Greeter)),
  ]);
  t.equal(h.get(GreeterT).greet(), 'hello world with a+b');
  t.same(h.hooks().map((x) => `${x.module}: ${x.cell}`), ['greeter: Greeter'], 'its hook is attributed to its module and class');
  t.match((h.get(GreeterT).log.bindings() as { module?: string }).module, 'greeter', 'it got its module\'s logger');
});

t.test('a missing @inject dependency is reported with the path before anything is constructed', async (t) => {
  const Missing = token<number>('Port');
  let built = 0;
  @injectable()
  class Server {
    constructor(@inject(Name) readonly name: string, @inject(Missing) readonly port: number) {
      built++;
    }
  }
  const ServerT = token<Server>('Server');
  const h = newHive([provide(Name, () => 'n'), module('server', 'Server', provide(ServerT, Server)), invoke('serve', (_s: Server) => undefined, ServerT)]);
  const err = t.throws(() => h.populate(), MissingDependencyError) as unknown as Error;
  t.match(err.message, /missing dependency Port\n {2}needed by: invoke "serve" \(module root\) -> Server \(module server\) -> Port\n {2}fix: add a cell that provides it \(provide\(Port/);
  t.equal(built, 0);
});

t.test('@optional dependencies may be absent', async (t) => {
  @injectable()
  class WithOptional {
    constructor(@inject(Name) @optional() readonly name: string | undefined) {}
  }
  const T = token<WithOptional>('WithOptional');
  t.equal(newHive([provide(T, WithOptional)]).get(T).name, undefined);
});

t.test('classes inversify cannot construct are refused with the fix', async (t) => {
  class Undecorated {
    constructor(readonly name: string) {}
  }
  t.throws(() => newHive([module('mm', 'M', provide(token<Undecorated>('U'), Undecorated))]), InjectableClassError);
  t.throws(() => newHive([module('mm', 'M', provide(token<Undecorated>('U'), Undecorated))]), /Undecorated \(module mm\) cannot be constructed by inversify.*\n {2}fix: decorate the class with @injectable\(\)/);
  @injectable()
  class GroupAsSingle {
    constructor(@inject(Plugins) readonly p: readonly string[]) {}
  }
  t.throws(() => newHive([provide(token<GroupAsSingle>('G'), GroupAsSingle)]), /injects the value group Plugins with @inject; a group is injected with @multiInject\(Plugins\)/);
  // the positional form still works for an undecorated class
  const U = token<Undecorated>('U');
  t.equal(newHive([provide(Name, () => 'x'), provide(U, Undecorated, Name)]).get(U).name, 'x');
});

t.test('the object form of dependencies passes one object of named values', async (t) => {
  const Cfg = token<{ port: number }>('Cfg');
  let got = '';
  const h = newHive([
    provide(Cfg, () => ({ port: 80 })),
    provide(Name, () => 'web'),
    module('web', 'Web', provide(Greeting, ({ cfg, name, lc }) => {
      lc.append({ name: 'listen', onStart: () => undefined });
      return `${name}:${cfg.port}`;
    }, { cfg: Cfg, name: Name, lc: LifecycleToken })),
    invoke('show', ({ g, all }) => { got = `${g} ${all.length}`; }, { g: Greeting, all: Plugins }),
  ]);
  h.populate();
  t.equal(got, 'web:80 0', 'an empty value group is an empty array');
  t.same(h.hooks().map((x) => x.hook.name), ['listen']);
});

t.test('a dependency that is not a token is refused when the cell is written', async (t) => {
  const undef = undefined as unknown as typeof Name;
  t.throws(() => provide(Greeting, (n: string) => n, undef), InvalidDependencyError);
  t.throws(() => provide(Greeting, ({ n }) => n, { n: undef }), /dependency "n" is not a token but undefined; fix: .*import cycle/);
});

t.test('cycles through @inject classes are named', async (t) => {
  const A = token<unknown>('A');
  const B = token<unknown>('B');
  @injectable()
  class Ca { constructor(@inject(B) readonly b: unknown) {} }
  @injectable()
  class Cb { constructor(@inject(A) readonly a: unknown) {} }
  const h = newHive([module('ma', 'A', provide(A, Ca)), module('mb', 'B', provide(B, Cb))]);
  t.throws(() => h.get(A), DependencyCycleError);
  t.throws(() => h.get(A), /dependency cycle: Ca<A> \(module ma\) -> Cb<B> \(module mb\) -> Ca<A> \(module ma\)/);
});

t.test('cells loaded into a host container resolve from it and use its bindings', async (t) => {
  const host = new Container();
  host.bind(Name.id).toConstantValue('from-the-host');
  const h = loadCells(host, [module('greet', 'Greet', provide(Greeting, (n: string) => `hello ${n}`, Name))], { logger: silentLogger() });
  t.equal(host.get<string>(Greeting.id), 'hello from-the-host');
  t.equal(h.get(Greeting), 'hello from-the-host', 'the same singleton');
  await h.start();
  await h.stop();
});

t.test('a host binding of a token a cell provides is a duplicate naming the host', async (t) => {
  const host = new Container();
  host.bind(Name.id).toConstantValue('host');
  t.throws(() => loadCells(host, [module('nn', 'N', provide(Name, () => 'cell'))]), DuplicateProviderError);
  t.throws(() => loadCells(host, [module('nn', 'N', provide(Name, () => 'cell'))]), /Name is provided twice: by the host inversify container and by Name \(module nn\); remove one/);
});

t.test('a host binding of a built-in replaces it in every module, like replace()', async (t) => {
  const host = new Container();
  const lines: string[] = [];
  const log = { info: (m: string) => lines.push(m), child: () => log } as unknown as Logger;
  host.bind(LoggerToken.id).toConstantValue(log);
  const h = loadCells(host, [module('talk', 'Talk', provide(Greeting, (l: Logger) => { l.info('constructed'); return 'x'; }, LoggerToken))], { logger: silentLogger() });
  h.get(Greeting);
  t.same(lines, ['constructed']);
});

t.test('asked from a host container, a provider with a missing dependency is reported like at populate', async (t) => {
  const host = new Container();
  loadCells(host, [module('greet', 'Greet', provide(Greeting, (n: string) => n, Name))], { logger: silentLogger() });
  t.throws(() => host.get(Greeting.id), MissingDependencyError);
  t.throws(() => host.get(Greeting.id), /needed by: Greeting \(module greet\) -> Name/);
});

t.test('toContainerModule() exposes the public providers to another container', async (t) => {
  const Secret = token<string>('Secret');
  const h = newHive([
    provide(Name, () => 'n'),
    module('mm', 'M', providePrivate(Secret, () => 's'), provide(Greeting, (n: string, s: string) => `${n}${s}`, Name, Secret)),
    module('p1', 'P1', provideInto(Plugins, () => 'one')),
    module('p2', 'P2', provideInto(Plugins, () => 'two')),
  ]);
  const other = new Container();
  other.load(h.toContainerModule());
  t.equal(other.get<string>(Greeting.id), 'ns');
  t.same(other.getAll<string>(Plugins.id), ['one', 'two']);
  t.notOk(other.isBound(Secret.id), 'private providers stay private');
  t.equal(h.get(Greeting), other.get(Greeting.id), 'one singleton');
});

t.test('a hook appended after the start is refused: it would never start', async (t) => {
  const Late = token<string>('Late');
  const h = newHive([module('late', 'Late', provide(Late, (lc: Lifecycle) => { lc.append({ name: 'late', onStart: () => undefined }); return 'late'; }, LifecycleToken))]);
  await h.start();
  const err = t.throws(() => h.get(Late), ConstructionError) as unknown as ConstructionError;
  t.type(err.cause, HiveStateError);
  t.match(err.message, /hook "late" was appended after the hive started.*fix: construct Late before start\(\)/);
  await h.stop();
});

t.test('replace() still wins over a private provider and the built-ins', async (t) => {
  const h = await testHive(t, [module('mm', 'M', providePrivate(Name, () => 'real'), provide(Greeting, (n: string) => n, Name))], { replace: [[Name, 'mock']] });
  t.equal(h.get(Greeting), 'mock');
  t.equal(newHive([replace(Name, 'r'), provide(Greeting, (n: string) => n, Name)]).get(Greeting), 'r');
});

t.test('testLifecycle starts hooks as they are appended and stops them in reverse at the end of the test', async (t) => {
  const events: string[] = [];
  await t.test('inner', async (t) => {
    const lc = testLifecycle(t);
    lc.append({ name: 'a', onStart: async () => { events.push('start a'); }, onStop: () => { events.push('stop a'); } });
    lc.append({ name: 'b', onStart: () => { events.push('start b'); }, onStop: () => { events.push('stop b'); } });
    await lc.ready();
    t.same(events, ['start a', 'start b']);
  });
  t.same(events, ['start a', 'start b', 'stop b', 'stop a']);
});

t.test('testLifecycle: a failed start fails ready(), later hooks do not start, started ones still stop', async (t) => {
  const events: string[] = [];
  const teardowns: (() => unknown)[] = [];
  const lc = testLifecycle({ after: (fn) => teardowns.push(fn) }); // node:test's context has after(), tap's teardown()
  lc.append({ onStart: () => { events.push('start a'); }, onStop: () => { events.push('stop a'); } });
  lc.append({ name: 'b', onStart: () => { throw new Error('port in use'); }, onStop: () => { events.push('stop b'); } });
  lc.append({ onStart: () => { events.push('start c'); } });
  await t.rejects(lc.ready(), /port in use/);
  await t.rejects(Promise.resolve().then(() => teardowns[0]!()), /port in use/, 'the teardown reports the failure too');
  t.same(events, ['start a', 'stop a']);
});

t.test('a value group is not one value: it cannot be provided, replaced or decorated as one', async (t) => {
  t.throws(() => newHive([module('mm', 'M', provide(Plugins, () => ['a']))]), /provide\(Plugins\) in module mm: Plugins is a value group, not one value; fix: contribute members with provideInto\(Plugins/);
  t.throws(() => newHive([replace(Plugins, ['a'])]), /replace\(Plugins\) in the hive/);
  t.throws(() => newHive([module('mm', 'M', decorate(Plugins, (p: readonly string[]) => p, []))]), /decorate\(Plugins\) in module mm/);
});

t.test('a container holds the cells of one hive: a second loadCells into it (or a child) is refused', async (t) => {
  const host = new Container();
  loadCells(host, [module('one', 'One', provide(Name, () => 'n'))], { logger: silentLogger() });
  t.throws(() => loadCells(host, [module('two', 'Two', provide(Greeting, () => 'g'))]), /already holds the cells of a hive.*fix: load all the cells in one loadCells\(\) call/);
  t.throws(() => loadCells(new Container({ parent: host }), [module('two', 'Two', provide(Greeting, () => 'g'))]), HiveStateError);
});
