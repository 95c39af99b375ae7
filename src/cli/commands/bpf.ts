/**
 * `cellium bpf ct list global` and `cellium bpf ct flush global`: the conntrack maps read (and
 * flushed) straight from their pins under --bpf-root, like cilium-dbg (no agent API involved; the
 * agent need not be running). Lines in Cilium's format; `-o json` gives one object per entry.
 */
import type { Command } from 'commander';
import type { CtMaps } from '../../maps/index.js';
import type { CtEntry, CtKey } from '../../datapath/conntrack.js';
import type { CliContext, CommandGroup } from '../context.js';
import { CliFailure, UsageError } from '../errors.js';
import { registerBpfLb } from './bpf-lb.js';

const DEFAULT_ROOT = '/sys/fs/bpf/cellium';

/** One entry as `-o json` prints it. */
export interface CtRecord {
  readonly map: string;
  /** The connection as opened: `TCP OUT 10.0.0.2:42394 -> 10.0.0.3:80`. */
  readonly connection: string;
  readonly key: CtKey;
  readonly entry: CtEntry;
  /** Seconds until it expires (0: expired, waiting for the garbage collector). */
  readonly remaining: number;
}

function scope(which: string): void {
  if (which !== 'global') throw new UsageError(`unknown conntrack map "${which}": Cellium has the global maps only (cellium bpf ct list global)`);
}

/** Opens the pinned maps, naming the root and what to do when that fails. */
async function openMaps(root: string): Promise<CtMaps> {
  const bpf = await import('../../maps/index.js');
  try {
    return bpf.CtMaps.openPinned(root);
  } catch (err) {
    const e = err as { code?: string; message: string };
    if (e.code === 'ENOENT') throw new CliFailure(`no conntrack maps pinned under ${root}: is the agent running with --datapath-mode=bpf and --bpf-root=${root}? (pass --bpf-root to read another root)`);
    if (e.code === 'EPERM' || e.code === 'EACCES') throw new CliFailure(`cannot open the conntrack maps under ${root}: needs root or CAP_BPF`);
    throw new CliFailure(e.message);
  }
}

/** The entries of every conntrack map under `root`, with the connection text and time left. */
export async function listConntrack(root: string): Promise<CtRecord[]> {
  const bpf = await import('../../maps/index.js');
  const maps = await openMaps(root);
  try {
    const now = bpf.monotonicSeconds();
    return maps.entries().map(({ map, key, entry }) => ({ map, connection: bpf.ctKeyText(key), key, entry, remaining: Math.max(0, entry.lifetime - now) }));
  } finally {
    maps.close();
  }
}

async function list(ctx: CliContext, which: string, root: string): Promise<void> {
  scope(which);
  const bpf = await import('../../maps/index.js');
  const records = await listConntrack(root);
  const now = bpf.monotonicSeconds();
  ctx.print(records, (rs) => (rs.length ? rs.map((r) => `${bpf.ctEntryLine(r.key, r.entry, now)}\n`).join('') : 'No entries found.\n'));
}

async function flush(ctx: CliContext, which: string, root: string): Promise<void> {
  scope(which);
  const bpf = await import('../../maps/index.js');
  const maps = await openMaps(root);
  try {
    const flushed = await bpf.flushCtMaps(maps);
    const total = Object.values(flushed).reduce((a, b) => a + b, 0);
    ctx.print({ flushed: total, maps: flushed }, () => Object.entries(flushed).map(([name, n]) => `Flushed ${n} entries from ${root}/${name}\n`).join(''));
  } finally {
    maps.close();
  }
}

/** Registers `cellium bpf ct list|flush global`. */
export const bpfCommands: CommandGroup = (program, rt) => {
  const bpf = program.command('bpf').description('read the datapath\'s BPF maps directly (as root, like cilium-dbg bpf)');
  const ct = bpf
    .command('ct')
    .description('the connection tracking tables (cellium_ct4_global, cellium_ct_any4_global, cellium_ct6_global, cellium_ct_any6_global)');
  const withRoot = (c: Command): Command => c.option('--bpf-root <dir>', "the agent's --bpf-root", DEFAULT_ROOT);
  withRoot(ct.command('list').description('list the connections tracked').argument('<global>', 'which tables: global'))
    .action(rt.action(async (ctx, which: string, opts: { bpfRoot: string }) => list(ctx, which, opts.bpfRoot)));
  withRoot(ct.command('flush').description('delete every tracked connection (established ones are then judged as new by the policy)').argument('<global>', 'which tables: global'))
    .action(rt.action(async (ctx, which: string, opts: { bpfRoot: string }) => flush(ctx, which, opts.bpfRoot)));
  registerBpfLb(bpf, rt, DEFAULT_ROOT);
};
