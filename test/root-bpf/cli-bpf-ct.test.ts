// `cellium bpf ct list|flush global` (root: reads and flushes pinned maps): Cilium's line format
// on entries written to a test BPF root, -o json, flush counts per map and leaves the maps empty,
// and clear errors for a root without maps and for tables Cellium does not have.
import t from 'tap';
import { CtMaps, monotonicSeconds } from '../../src/maps/index.js';
import type { CtEntry, CtKey } from '../../src/datapath/conntrack.js';
import { runCli } from '../../src/cli/main.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();

async function cellium(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), readFile: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

const entry = (lifetime: number, srcSecId: number): CtEntry => ({
  rxPackets: 5, rxBytes: 400, txPackets: 6, txBytes: 500, lifetime, flags: 0x10, revNat: 0, txFlagsSeen: 0x1b, rxFlagsSeen: 0x1a, srcSecId, lastTxReport: 10, lastRxReport: 11,
});

t.test('list and flush the global conntrack maps of a BPF root', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const ct = CtMaps.open(root, { tcp: 1024, any: 1024 });
  t.teardown(() => ct.close());
  const lifetime = monotonicSeconds() + 3600;
  const tcp: CtKey = { family: 'ipv4', daddr: '10.0.0.2', saddr: '10.0.0.3', dport: 80, sport: 42394, nexthdr: 6, flags: 0 };
  const udp6: CtKey = { family: 'ipv6', daddr: 'fd00::10', saddr: 'fd00::2', dport: 53, sport: 5000, nexthdr: 17, flags: 1 };
  ct.mapOf(tcp).set(tcp, entry(lifetime, 4242));
  ct.mapOf(udp6).set(udp6, entry(lifetime, 1000));

  const list = await cellium('bpf', 'ct', 'list', 'global', '--bpf-root', root);
  t.equal(list.code, 0, list.err);
  const lines = list.out.trim().split('\n');
  t.equal(lines.length, 2);
  t.match(lines.find((l) => l.startsWith('TCP')), new RegExp(`^TCP OUT 10\\.0\\.0\\.2:42394 -> 10\\.0\\.0\\.3:80 expires=${lifetime} \\(remaining: 3\\d{3} sec\\(s\\)\\) RxPackets=5 RxBytes=400 RxFlagsSeen=0x1a LastRxReport=11 TxPackets=6 TxBytes=500 TxFlagsSeen=0x1b LastTxReport=10 Flags=0x0010 \\[ SeenNonSyn \\] RevNAT=0 SourceSecurityID=4242$`));
  t.match(lines.find((l) => l.startsWith('UDP')), /^UDP IN \[fd00::10\]:5000 -> \[fd00::2\]:53 expires=/);

  const json = await cellium('bpf', 'ct', 'list', 'global', '-o', 'json', '--bpf-root', root);
  t.equal(json.code, 0, json.err);
  const records = JSON.parse(json.out) as Array<{ map: string; connection: string; key: CtKey; entry: CtEntry; remaining: number }>;
  t.match(records.find((r) => r.map === 'cellium_ct4_global'), { connection: 'TCP OUT 10.0.0.2:42394 -> 10.0.0.3:80', key: tcp, entry: { srcSecId: 4242, lifetime } });
  t.ok(records.every((r) => r.remaining > 3500 && r.remaining <= 3600), 'seconds left');

  const flush = await cellium('bpf', 'ct', 'flush', 'global', '--bpf-root', root);
  t.equal(flush.code, 0, flush.err);
  t.match(flush.out, new RegExp(`^Flushed 1 entries from ${root}/cellium_ct4_global$`, 'm'));
  t.match(flush.out, new RegExp(`^Flushed 0 entries from ${root}/cellium_ct_any4_global$`, 'm'));
  t.match(flush.out, new RegExp(`^Flushed 1 entries from ${root}/cellium_ct_any6_global$`, 'm'));
  t.same(ct.entries(), [], 'the maps are empty');
  t.equal((await cellium('bpf', 'ct', 'list', 'global', '--bpf-root', root)).out, 'No entries found.\n');
  t.same(JSON.parse((await cellium('-o', 'json', 'bpf', 'ct', 'flush', 'global', '--bpf-root', root)).out), {
    flushed: 0, maps: { cellium_ct4_global: 0, cellium_ct_any4_global: 0, cellium_ct6_global: 0, cellium_ct_any6_global: 0 },
  });
});

t.test('errors name the root and the fix', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const none = await cellium('bpf', 'ct', 'list', 'global', '--bpf-root', root);
  t.equal(none.code, 1);
  t.match(none.err, `no conntrack maps pinned under ${root}: is the agent running with --datapath-mode=bpf and --bpf-root=${root}?`);
  const local = await cellium('bpf', 'ct', 'list', '42', '--bpf-root', root);
  t.equal(local.code, 2);
  t.match(local.err, /unknown conntrack map "42": Cellium has the global maps only/);
});
