/**
 * Hive benchmark: populate + start + stop of a hive of 200 cells (each a module with a provider
 * depending on the previous one and a start/stop hook), against a baseline of constructing the same
 * 200 objects and calling the same hooks by hand, in the same run. A second hive row has every
 * provider also inject its module's Logger, so that every module is a child inversify container
 * of its own (a module that binds nothing of its own shares its parent's).
 */
import { Hive, module, provide, invoke, token, LifecycleToken, LoggerToken, silentLogger, type Lifecycle, type Logger, type Token, type Cell } from '../src/hive/index.js';
import { printTable, sample, stats } from './lib/report.js';

const N = 200;

function cells(withLogger: boolean): Cell[] {
  const toks: Token<number>[] = Array.from({ length: N }, (_, i) => token<number>(`Svc${i}`));
  const out: Cell[] = toks.map((tok, i) => {
    const prev = toks[i - 1];
    const make = (lc: Lifecycle, p?: number): number => {
      lc.append({ onStart: () => undefined, onStop: () => undefined });
      return (p ?? 0) + 1;
    };
    const logged = (lc: Lifecycle, log: Logger, p?: number): number => {
      log.debug('constructed');
      return make(lc, p);
    };
    if (withLogger) {
      return module(`cell-${i}`, `Cell ${i}`, prev ? provide(tok, logged, LifecycleToken, LoggerToken, prev) : provide(tok, (lc: Lifecycle, log: Logger) => logged(lc, log), LifecycleToken, LoggerToken));
    }
    return module(`cell-${i}`, `Cell ${i}`, prev ? provide(tok, make, LifecycleToken, prev) : provide(tok, (lc: Lifecycle) => make(lc), LifecycleToken));
  });
  out.push(invoke('all', (_n: number) => undefined, toks[N - 1]!));
  return out;
}

async function runHive(withLogger: boolean): Promise<void> {
  const h = new Hive(cells(withLogger), { logger: silentLogger() });
  h.populate();
  await h.start();
  await h.stop();
}

async function main(): Promise<void> {
  const runs = 30;
  const hive = stats(await sample(runs, () => runHive(false)));
  const withLogger = stats(await sample(runs, () => runHive(true)));
  const baseline = stats(await sample(runs, async () => {
    const hooks: { onStart(): void; onStop(): void }[] = [];
    let v = 0;
    for (let i = 0; i < N; i++) {
      hooks.push({ onStart: () => undefined, onStop: () => undefined });
      v += 1;
    }
    for (const h of hooks) await h.onStart();
    for (const h of hooks.reverse()) await h.onStop();
    return v;
  }));
  printTable(`hive: populate + start + stop of ${N} cells (${runs} runs)`, ['what', 'p50 ms', 'p99 ms', 'mean ms'], [
    ['hive (200 modules, providers, hooks)', hive.p50Ms, hive.p99Ms, hive.meanMs],
    ['hive, each provider also injecting its module\'s Logger (200 child containers)', withLogger.p50Ms, withLogger.p99Ms, withLogger.meanMs],
    ['baseline: same objects and hooks by hand', baseline.p50Ms, baseline.p99Ms, baseline.meanMs],
  ]);
}

await main();
