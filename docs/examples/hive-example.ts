/**
 * The runnable example of docs/hive.md: two modules, a private provider, config, a start/stop hook,
 * a timer job and health. `runExample()` starts the hive, lets the job tick, stops it and returns
 * what happened; test/docs/examples.test.ts runs it.
 */
import {
  Hive, module, provide, providePrivate, invoke, config, token, duration, string, silentLogger,
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

class GreeterImpl implements Greeter {
  count = 0;
  constructor(private readonly cfg: ValuesOf<typeof greeterSchema>, private readonly punct: string, lc: Lifecycle, jobs: Jobs, health: Health, private readonly log: string[]) {
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

const LogToken = token<string[]>('ExampleLog');

/** The greeter module. */
export const greeterCell = module('greeter', 'Says hello',
  config(GreeterConfig, greeterSchema),
  providePrivate(Punctuation, () => '!'),
  provide(GreeterToken, GreeterImpl, GreeterConfig, Punctuation, LifecycleToken, JobsToken, HealthToken, LogToken),
);

/** A second module using the greeter. */
export const appCell = module('app', 'The application',
  invoke('greet-world', (g: Greeter) => { g.greet('world'); }, GreeterToken),
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
