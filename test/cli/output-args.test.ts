// The CLI's building blocks: tables, key/value blocks, argument parsers.
import t from 'tap';
import { collect, parseKeyValues, parsePortProtocol, parseSeconds, parseTraceSubject } from '../../src/cli/args.js';
import { UsageError } from '../../src/cli/errors.js';
import { describeError } from '../../src/cli/context.js';
import { ApiError } from '../../src/api/errors.js';
import { json, keyValues, table } from '../../src/cli/output.js';

t.test('table: aligned columns, multi-line cells, empty cells, no trailing spaces', async (t) => {
  const out = table(['Id', 'Labels', 'State'], [
    [1, ['a:x', 'a:longer'], 'ready'],
    [22, [], undefined],
  ]);
  t.equal(out, 'ID   LABELS     STATE\n1    a:x        ready\n     a:longer\n22\n');
  t.equal(table(['A'], []), 'A\n');
});

t.test('keyValues: aligned values, skipped undefined, indented continuation lines', async (t) => {
  t.equal(keyValues([['Name', 'web'], ['Skip', undefined], ['Labels', ['a', 'b']], ['On', false]]), 'Name:     web\nLabels:   a\n          b\nOn:       false\n');
  t.equal(json({ a: 1 }), '{\n  "a": 1\n}\n');
  t.equal(json(undefined), 'null\n');
});

t.test('--dport PORT[/PROTOCOL]', async (t) => {
  t.same(parsePortProtocol('80/TCP'), { port: 80, protocol: 'TCP' });
  t.same(parsePortProtocol('53/udp'), { port: 53, protocol: 'UDP' });
  t.same(parsePortProtocol('8080'), { port: 8080, protocol: 'TCP' });
  t.same(parsePortProtocol('0/any'), { port: 0, protocol: 'ANY' });
  t.same(parsePortProtocol('0/icmpv6'), { port: 0, protocol: 'ICMPV6' });
  for (const bad of ['', 'x', '80/', '/TCP', '65536', '80/TCP/UDP', '-1', '80/http']) t.throws(() => parsePortProtocol(bad), UsageError, bad);
});

t.test('KEY=VALUE settings, trace subjects, durations, collect', async (t) => {
  t.same(parseKeyValues(['Debug=Enabled', 'A = b=c', 'Debug=Disabled']), { Debug: 'Disabled', A: 'b=c' });
  t.throws(() => parseKeyValues(['=x']), UsageError);
  t.same(parseTraceSubject(['42'], '--src'), { identity: 42 });
  t.same(parseTraceSubject(['k8s:a=b', 'k8s:c=d,k8s:e=f'], '--src'), { labels: ['k8s:a=b', 'k8s:c=d', 'k8s:e=f'] });
  t.throws(() => parseTraceSubject([], '--dst'), /--dst is required/);
  t.throws(() => parseTraceSubject(['1', '2'], '--dst'), /either one numeric identity or labels/);
  t.equal(parseSeconds('30'), 30);
  t.equal(parseSeconds('30s'), 30);
  t.equal(parseSeconds('2m'), 120);
  t.equal(parseSeconds('500ms'), 0.5);
  t.equal(parseSeconds('1h30m'), 5400, 'the config duration syntax');
  t.equal(parseSeconds('2.5'), 2.5);
  t.throws(() => parseSeconds('soon'), UsageError);
  t.same(collect('b', collect('a')), ['a', 'b']);
});

t.test('error messages: field and expected added only when the message lacks them', async (t) => {
  t.same(describeError(new ApiError(400, 'invalid value', '/body/x', 'integer')), { message: 'invalid value (field /body/x, expected integer) [HTTP 400]', code: 1 });
  t.same(describeError(new ApiError(400, '/body/x must be integer', '/body/x', 'integer')), { message: '/body/x must be integer [HTTP 400]', code: 1 });
  t.same(describeError(new ApiError(400, '/body/ip must match format "ipv4"', '/body/ip', 'string in format ipv4')), {
    message: '/body/ip must match format "ipv4" (expected string in format ipv4) [HTTP 400]',
    code: 1,
  });
  t.same(describeError(new ApiError(429, 'slow down', undefined, undefined, 5)), { message: 'slow down; retry after 5s [HTTP 429]', code: 1 });
  t.same(describeError(new UsageError('bad')), { message: 'bad', code: 2 });
  t.same(describeError('weird'), { message: 'weird', code: 1 });
});
