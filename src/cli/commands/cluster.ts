/**
 * Kvstore mode: `cellium node list` (GET /cluster/nodes), `cellium ip list` (GET /ip), and
 * `cellium kvstore get [--recursive] KEY`, which reads etcd directly (as Cilium's CLI does) with the
 * agent's etcd config file (`--kvstore-opt etcd.config=FILE` or CELLIUM_KVSTORE_OPT). The etcd
 * client (etcd3, gRPC, protobufjs) is loaded only by that command: every other command starts
 * without it (it was a third of each `cellium` call's start).
 */
import type { ClusterNodeStatus, IPListEntry } from '../../api/models.js';
import type { CommandGroup } from '../context.js';
import { CliFailure, UsageError } from '../errors.js';
import { table } from '../output.js';

/** The node table. */
export function renderNodes(s: ClusterNodeStatus): string {
  const rows = (s['nodes-added'] ?? []).map((n) => {
    const v4 = n['primary-address']?.ipv4;
    return [`${n.name ?? ''}${n.name === s.self ? ' (self)' : ''}`, v4?.ip ?? '', v4?.['alloc-range'] ?? '', n.source ?? ''];
  });
  return table(['Name', 'IPv4 address', 'Endpoint CIDR', 'Source'], rows);
}

/** The ipcache table. */
export function renderIPs(list: readonly IPListEntry[]): string {
  return table(['IP', 'Identity', 'Host IP', 'Source', 'Pod'], list.map((e) => [
    e.cidr, e.identity, e.hostIP ?? '', e.metadata?.source ?? '',
    e.metadata?.name ? `${e.metadata.namespace ? `${e.metadata.namespace}/` : ''}${e.metadata.name}` : '',
  ]));
}

/** The etcd config file from `--kvstore-opt etcd.config=FILE`. */
export function etcdConfigFile(opt: string | undefined): string {
  if (!opt) throw new UsageError('cellium kvstore needs the agent\'s etcd config: --kvstore-opt etcd.config=FILE (or CELLIUM_KVSTORE_OPT=etcd.config=FILE)');
  const m = /^etcd\.config=(.+)$/.exec(opt.trim());
  if (!m) throw new UsageError(`--kvstore-opt ${JSON.stringify(opt)}: expected etcd.config=FILE`);
  return m[1]!;
}

/** Registers node, ip and kvstore commands. */
export const clusterCommands: CommandGroup = (program, rt) => {
  program.command('node').description('show the nodes of the cluster (kvstore mode)')
    .command('list').description('list the nodes this agent knows, itself included')
    .action(rt.action(async (ctx) => {
      ctx.print(await ctx.client.clusterNodes(), renderNodes);
    }));

  program.command('ip').description('show the ipcache')
    .command('list').description('list IP -> identity entries: local endpoints and those other nodes published')
    .option('--cidr <cidr>', 'only entries within this CIDR')
    .action(rt.action(async (ctx, opts: { cidr?: string }) => {
      ctx.print(await ctx.client.ipList({ cidr: opts.cidr }), renderIPs);
    }));

  program.command('kvstore').description('read the kvstore (etcd) directly')
    .command('get').description('print the value of KEY, or with --recursive every key under the prefix KEY')
    .argument('<key>', 'a key such as cilium/state/nodes/v1/default/node-1, or a prefix with --recursive')
    .option('--recursive', 'every key under the prefix')
    .option('--kvstore-opt <opt>', 'etcd.config=FILE: the agent\'s etcd config (endpoints, TLS)')
    .action(rt.action(async (ctx, key: string, opts: { recursive?: boolean; kvstoreOpt?: string }) => {
      const [{ Etcd3 }, { readEtcdConfig }] = await Promise.all([import('etcd3'), import('../../lib/etcd-config.js')]);
      const cfg = readEtcdConfig(etcdConfigFile(opts.kvstoreOpt ?? ctx.io.env.CELLIUM_KVSTORE_OPT));
      const client = new Etcd3({
        hosts: [...cfg.endpoints],
        ...(cfg.tls ? { credentials: { rootCertificate: cfg.tls.ca, ...(cfg.tls.cert ? { certChain: cfg.tls.cert, privateKey: cfg.tls.key } : {}) } } : {}),
        defaultCallOptions: () => ({ deadline: Date.now() + 10_000 }),
      });
      try {
        let kvs: Record<string, string>;
        try {
          kvs = opts.recursive ? await client.getAll().prefix(key).strings() : await client.get(key).string().then((v) => (v === null ? {} : { [key]: v }));
        } catch (err) {
          throw new CliFailure(`kvstore: reading ${key} from ${cfg.endpoints.join(',')} failed: ${(err as Error).message}`);
        }
        if (Object.keys(kvs).length === 0) throw new CliFailure(`kvstore: ${opts.recursive ? 'no key under' : 'no key'} ${key}`);
        ctx.print(kvs, (m) => Object.entries(m).map(([k, v]) => `${k} => ${v}`).join('\n') + '\n');
      } finally {
        client.close();
      }
    }));
};
