/**
 * `cellium bpf lb list`: the load-balancing maps read straight from their pins under --bpf-root,
 * as Cilium prints them (no agent API involved); `-o json` gives one object per frontend. `--sock`:
 * the reverse-socket maps of socket load balancing instead (socket, backend -> frontend).
 */
import type { Command } from 'commander';
import type { CliRuntime } from '../context.js';
import { CliFailure } from '../errors.js';

/** Registers `lb list` under the `bpf` command. */
export function registerBpfLb(bpf: Command, rt: CliRuntime, defaultRoot: string): void {
  const lb = bpf.command('lb').description('the load-balancing maps (cellium_lb4_services, cellium_lb4_backends, ... and the v6 ones)');
  lb.command('list')
    .description('list the frontends with their backends by slot')
    .option('--bpf-root <dir>', "the agent's --bpf-root", defaultRoot)
    .option('--sock', 'the reverse-socket maps of socket load balancing (cellium_lb4_reverse_sk, cellium_lb6_reverse_sk): per socket and backend, the frontend it was translated from')
    .action(rt.action(async (ctx, opts: { bpfRoot: string; sock?: boolean }) => {
      if (opts.sock) {
        const { listReverseSk, renderReverseSk } = await import('./bpf-lb-sock.js');
        const entries = listReverseSk(opts.bpfRoot);
        ctx.print(entries, (es) => (es.length ? renderReverseSk(es) : 'No entries found.\n'));
        return;
      }
      const maps = await import('../../maps/index.js');
      const { listLB, renderLBList } = await import('../../maps/lb/list.js');
      let open;
      try {
        open = maps.openPinnedLBMaps(opts.bpfRoot);
      } catch (err) {
        const e = err as { code?: string; message: string };
        if (e.code === 'ENOENT') throw new CliFailure(`no LB maps pinned under ${opts.bpfRoot}: is the agent running with --datapath-mode=bpf and --bpf-root=${opts.bpfRoot}? (pass --bpf-root to read another root)`);
        if (e.code === 'EPERM' || e.code === 'EACCES') throw new CliFailure(`cannot open the LB maps under ${opts.bpfRoot}: needs root or CAP_BPF`);
        throw new CliFailure(e.message);
      }
      try {
        const entries = listLB(open);
        ctx.print(entries, (es) => (es.length ? renderLBList(es) : 'No entries found.\n'));
      } finally {
        open.close();
      }
    }));
}
