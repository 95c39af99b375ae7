import t from 'tap';
import { runExample } from '../../docs/examples/hive-example.js';

t.test('the docs/hive.md example runs as documented', async (t) => {
  const { log, health } = await runExample(['--greeting=hi', '--greet-interval=10ms']);
  t.equal(log[0], 'hi world!', 'invoke ran at populate, with config and the private provider');
  t.equal(log[1], 'greeter started');
  t.ok(log.filter((l) => l === 'hi timer!').length >= 2, 'the timer job ran');
  t.equal(log.at(-1), 'greeter stopped');
  const greeter = health.children.find((c) => c.name === 'greeter');
  t.equal(greeter?.children.find((c) => c.name === 'timer-greet')?.level, 'ok');
});
