/**
 * The runnable example of docs/hive.md: two modules, a private provider, config, a start/stop hook,
 * a timer job and health; the greeter is a class in the usual inversify style, the app's invoke
 * uses the object form of dependencies. `runExample()` starts the hive, lets the job tick, stops it
 * and returns what happened; test/docs/examples.test.ts runs it.
 */
import {
  Hive, module, provide, providePrivate, invoke, config, token, duration, string, silentLogger, injectable, inject,
  LifecycleToken, JobsToken, HealthToken, HealthTreeToken, sleep,
  type Lifecycle, type Jobs, type Health, type HealthNode, type ValuesOf, type Logger,
} from '../../src/hive/index.js';

/** The greeter's configuration: `--greeting` and `--greet-interval`. */
const greeterSchema = { greeting: string('hello', 'What to say'), greetInterval: duration('20ms', 'How often to greet') };
const GreeterConfig = token<ValuesOf<typeof greeterSchema>>('GreeterConfig');

/** What the greeter module exposes to other cells. */
export interface Greeter {
  greet(name: string): string;
  readonly count: number;
}
/** Token other cells inject to get the Greeter. */
export const GreeterToken = token<Greeter>('Greeter');

/** A private detail of the greeter module: nobody outside can inject it. */
const Punctuation = token<string>('Punctuation');

const LogToken = token<string[]>('ExampleLog');

@injectable()
class GreeterImpl implements Greeter {
  count = 0;
  constructor(
    @inject(GreeterConfig) private readonly cfg: ValuesOf<typeof greeterSchema>,
    @inject(Punctuation) private readonly punct: string,
    @inject(LifecycleToken) lc: Lifecycle,
    @inject(JobsToken) jobs: Jobs,
    @inject(HealthToken) health: Health,
    @inject(LogToken) private readonly log: string[],
  ) {
    lc.append({
      name: 'greeter',
      onStart: () => { log.push('greeter started'); health.ok('ready'); },
      onStop: () => { log.push('greeter stopped'); },
    });
    jobs.timer('greet', async () => { this.greet('timer'); }, cfg.greetInterval);
  }
  greet(name: string): string {
    this.count++;
    const s = `${this.cfg.greeting} ${name}${this.punct}`;
    this.log.push(s);
    return s;
  }
}

/** The greeter module. */
export const greeterCell = module('greeter', 'Says hello',
  config(GreeterConfig, greeterSchema),
  providePrivate(Punctuation, () => '!'),
  provide(GreeterToken, GreeterImpl), // inversify fills the constructor from its @inject metadata
);

/** A second module using the greeter. */
export const appCell = module('app', 'The application',
  invoke('greet-world', ({ greeter }) => { greeter.greet('world'); }, { greeter: GreeterToken }),
);

/** Builds, configures, starts and stops the example hive; returns its log and final health. */
export async function runExample(argv: string[] = ['--greeting=hi'], logger: Logger = silentLogger()): Promise<{ log: string[]; health: HealthNode }> {
  const log: string[] = [];
  const hive = new Hive([provide(LogToken, () => log), greeterCell, appCell], { logger });
  hive.configure({ argv });
  await hive.start();
  await sleep(70);
  const health = hive.get(HealthTreeToken).snapshot();
  await hive.stop();
  return { log, health };
}
