import t from 'tap';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Hive, module, config, invoke, token, duration, int, bool, string, list, oneOf, silentLogger, ConfigError,
  parseDuration, formatDuration, flagName, envName, type ValuesOf,
} from '../../src/hive/index.js';

const schema = {
  endpointGCInterval: duration('5m', 'Interval of the endpoint GC'),
  maxEndpoints: int(4095, 'Largest endpoint id', { min: 1, max: 65535 }),
  enablePolicy: bool(true, 'Enforce policy'),
  socketPath: string('/var/run/cellium/cellium.sock', 'API socket'),
  ipv4Ranges: list([], 'Pools'),
  datapathMode: oneOf(['auto', 'bpf', 'memory'], 'auto', 'Datapath'),
};
const Cfg = token<ValuesOf<typeof schema>>('EndpointConfig');

function hiveWith(seen: { cfg?: ValuesOf<typeof schema> }) {
  return new Hive([module('endpoint', 'Endpoint', config(Cfg, schema)), invoke('read', (c: ValuesOf<typeof schema>) => { seen.cfg = c; }, Cfg)], { logger: silentLogger() });
}

t.test('keys become flags and env vars', async (t) => {
  t.equal(flagName('endpointGCInterval'), 'endpoint-gc-interval');
  t.equal(flagName('ipv4Ranges'), 'ipv4-ranges');
  t.equal(envName('endpoint-gc-interval'), 'CELLIUM_ENDPOINT_GC_INTERVAL');
});

t.test('durations', async (t) => {
  t.equal(parseDuration('5m'), 300_000);
  t.equal(parseDuration('30s'), 30_000);
  t.equal(parseDuration('1h30m'), 5_400_000);
  t.equal(parseDuration('250ms'), 250);
  t.equal(formatDuration(300_000), '5m');
  t.equal(formatDuration(5_400_250), '1h30m250ms');
  t.throws(() => parseDuration('5 minutes'), /expected a duration such as 30s/);
  t.throws(() => parseDuration('5x'), /units ms, s, m, h/);
});

t.test('defaults apply when nothing is set', async (t) => {
  const seen: { cfg?: ValuesOf<typeof schema> } = {};
  const h = hiveWith(seen);
  h.configure({});
  h.populate();
  t.equal(seen.cfg?.endpointGCInterval, 300_000);
  t.equal(seen.cfg?.datapathMode, 'auto');
});

t.test('precedence: flag > env > file > default', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cfg-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'endpoint-gc-interval: 1m\nmax-endpoints: 100\nenable-policy: false\nipv4-ranges: [10.0.0.0/8]\n');
  const seen: { cfg?: ValuesOf<typeof schema> } = {};
  const h = hiveWith(seen);
  h.configure({
    argv: ['--config', file, '--endpoint-gc-interval=30s'],
    env: { CELLIUM_ENDPOINT_GC_INTERVAL: '2m', CELLIUM_MAX_ENDPOINTS: '200' },
  });
  h.populate();
  t.equal(seen.cfg?.endpointGCInterval, 30_000, 'flag beats env and file');
  t.equal(seen.cfg?.maxEndpoints, 200, 'env beats file');
  t.equal(seen.cfg?.enablePolicy, false, 'file beats default');
  t.same(seen.cfg?.ipv4Ranges, ['10.0.0.0/8']);
  const entry = h.config.entries().find((e) => e.flag === 'max-endpoints');
  t.equal(entry?.source, 'env');
});

t.test('JSON config files work too', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cfg-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'c.json');
  writeFileSync(file, JSON.stringify({ 'datapath-mode': 'memory' }));
  const seen: { cfg?: ValuesOf<typeof schema> } = {};
  const h = hiveWith(seen);
  h.configure({ file });
  h.populate();
  t.equal(seen.cfg?.datapathMode, 'memory');
});

t.test('unknown keys name the closest valid one', async (t) => {
  t.throws(() => hiveWith({}).configure({ argv: ['--endpoint-gc-intervall=1m'] }), /unknown flag --endpoint-gc-intervall; did you mean "--endpoint-gc-interval"\?/);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cfg-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'datapath-mod: bpf\n');
  t.throws(() => hiveWith({}).configure({ file }), /unknown key in config file .*c\.yaml: "datapath-mod"; did you mean "datapath-mode"\?/);
});

t.test('wrongly typed values name the key and what was expected', async (t) => {
  t.throws(() => hiveWith({}).configure({ argv: ['--max-endpoints=many'] }), ConfigError);
  t.throws(() => hiveWith({}).configure({ argv: ['--max-endpoints=many'] }), /invalid value for flag "max-endpoints": expected an integer/);
  t.throws(() => hiveWith({}).configure({ argv: ['--max-endpoints=0'] }), /expected an integer >= 1/);
  t.throws(() => hiveWith({}).configure({ env: { CELLIUM_ENABLE_POLICY: 'maybe' } }), /CELLIUM_ENABLE_POLICY.*expected a boolean/);
  t.throws(() => hiveWith({}).configure({ argv: ['--datapath-mode', 'ebpf'] }), /expected one of auto, bpf, memory/);
  t.throws(() => hiveWith({}).configure({ argv: ['--endpoint-gc-interval'] }), /needs a value/);
});

t.test('boolean flags accept --flag, --no-flag and --flag=false', async (t) => {
  for (const [argv, want] of [[['--enable-policy'], true], [['--no-enable-policy'], false], [['--enable-policy=false'], false]] as const) {
    const seen: { cfg?: ValuesOf<typeof schema> } = {};
    const h = hiveWith(seen);
    h.configure({ argv: [...argv] });
    h.populate();
    t.equal(seen.cfg?.enablePolicy, want, argv.join(' '));
  }
});

t.test('positional arguments are returned', async (t) => {
  t.same(hiveWith({}).configure({ argv: ['hive', '--max-endpoints=3', 'dot-graph'] }), ['hive', 'dot-graph']);
});

t.test('a flag declared by two cells is an error naming both', async (t) => {
  const Other = token<{ socketPath: string }>('OtherConfig');
  t.throws(
    () => new Hive([
      module('endpoint', 'E', config(Cfg, schema)),
      module('server', 'S', config(Other, { socketPath: string('/x', 'dup') })),
    ], { logger: silentLogger() }),
    /flag --socket-path is declared twice: by EndpointConfig \(module endpoint\) and by OtherConfig \(module server\)/,
  );
});
