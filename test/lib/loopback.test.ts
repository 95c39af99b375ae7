// What counts as loopback when deciding whether a token may travel over plain HTTP.
import t from 'tap';
import { isLoopbackHost } from '../../src/lib/loopback.js';

t.test('loopback hosts', async (t) => {
  for (const h of ['localhost', 'LOCALHOST', '127.0.0.1', '127.1.2.3', '::1', '[::1]']) t.ok(isLoopbackHost(h), h);
  for (const h of ['', '0.0.0.0', '::', '10.0.0.1', 'node1', 'localhost.evil.example', '128.0.0.1', '[::2]']) t.notOk(isLoopbackHost(h), h || '(every interface)');
});
