/** `cellium status`: the agent's health (GET /healthz). */
import type { HealthNode, StatusResponse } from '../../api/models.js';
import { parseSeconds } from '../args.js';
import type { CommandGroup } from '../context.js';
import { keyValues, table } from '../output.js';
import { waitForAgent } from '../wait.js';

/** One line per health node, indented by depth; `all` shows ok nodes below the top too. */
export function renderHealthTree(node: HealthNode, all: boolean, depth = 0): string[] {
  const mark = node.level === 'ok' ? 'ok' : node.level.toUpperCase();
  const self = `${'  '.repeat(depth)}${node.name}: ${mark}${node.message ? ` - ${node.message}` : ''}${node.error ? ` (${node.error})` : ''}`;
  const children = node.children.filter((c) => all || c.level !== 'ok').flatMap((c) => renderHealthTree(c, all, depth + 1));
  return [self, ...children];
}

/** `bpf, veth devices (attach tcx)`, `memory (in the agent's process; no BPF programs or maps)`, or Cilium's bare device mode. */
export function datapathLine(s: StatusResponse): string | undefined {
  const attach = s['attach-mode'] ? ` (attach ${s['attach-mode']})` : '';
  if (s['cellium-datapath'] === 'memory') return "memory (in the agent's process; no BPF programs or maps)";
  if (s['cellium-datapath'] === 'bpf') return `bpf${s['datapath-mode'] ? `, ${s['datapath-mode']} devices` : ''}${attach}`;
  return s['datapath-mode'] ? `${s['datapath-mode']}${attach}` : undefined;
}

/** The human summary of a StatusResponse. */
export function renderStatus(s: StatusResponse, verbose: boolean): string {
  const ctrls = s.controllers ?? [];
  const failing = ctrls.filter((c) => (c.status?.['consecutive-failure-count'] ?? 0) > 0);
  const ipam = s.ipam;
  const allocated = Object.keys(ipam?.allocations ?? {}).length;
  const pools = [...(ipam?.ipv4 ?? []), ...(ipam?.ipv6 ?? [])];
  const state = (st?: { state?: string; msg?: string }): string | undefined =>
    st ? `${st.state ?? 'Unknown'}${st.msg ? `   ${st.msg}` : ''}` : undefined;
  let out = keyValues([
    ['Cellium', state(s.cilium)],
    ['Kubernetes', state(s.kubernetes)],
    ['KVStore', state(s.kvstore)],
    ['CNI config', state(s['cni-file'])],
    ['Datapath mode', datapathLine(s)],
    ['IPAM', ipam ? `${allocated} allocated${pools.length ? ` from ${pools.join(', ')}` : ''}${ipam.status ? `   ${ipam.status}` : ''}` : undefined],
    ['Identity range', s['identity-range'] ? `${s['identity-range']['min-identity']} - ${s['identity-range']['max-identity']}` : undefined],
    ['Controllers', s.controllers ? `${ctrls.length - failing.length}/${ctrls.length} healthy` : undefined],
    ['BPF maps', s['bpf-maps'] ? `${(s['bpf-maps'].maps ?? []).length} maps` : undefined],
    ['Health', s['cellium-health'] ? renderHealthTree(s['cellium-health'], verbose) : undefined],
  ]);
  const shown = verbose ? ctrls : failing;
  if (shown.length) {
    out +=
      '\n' +
      table(
        ['Controller', 'Successes', 'Failures', 'Last failure'],
        shown.map((c) => [c.name, c.status?.['success-count'] ?? 0, c.status?.['failure-count'] ?? 0, c.status?.['last-failure-msg'] ?? '']),
      );
  }
  if (verbose && s['bpf-maps']?.maps?.length) {
    out += '\n' + table(['BPF map', 'Size'], s['bpf-maps'].maps.map((m) => [m.name, m.size]));
  }
  return out;
}

/** Registers `cellium status`. */
export const statusCommands: CommandGroup = (program, rt) => {
  program
    .command('status')
    .description("show the agent's health: state, datapath, IPAM, controllers, health tree")
    .option('-v, --verbose', 'list every controller, BPF map and health node')
    .option('--brief', 'only the agent state')
    .option('--wait', 'wait until the agent is up and its state is Ok (progress on stderr)')
    .option('--wait-timeout <duration>', 'give up waiting after this long', '60s')
    .action(
      rt.action(async (ctx, opts: { verbose?: boolean; brief?: boolean; wait?: boolean; waitTimeout: string }) => {
        if (opts.wait) await waitForAgent(ctx, { timeoutSeconds: parseSeconds(opts.waitTimeout) });
        const s = await ctx.client.status({ brief: opts.brief === true });
        ctx.print(s, (v) => renderStatus(v, opts.verbose === true));
      }),
    );
};
