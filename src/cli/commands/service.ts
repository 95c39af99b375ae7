/** `cellium service list|get|update|delete|import`: services (load balancing), Cilium's columns. */
import { Option } from 'commander';
import type { CelliumServiceImport, Service, ServiceSpec } from '../../api/models.js';
import { canonicalAddr } from '../../lib/addr.js';
import type { CommandGroup } from '../context.js';
import { CliFailure, UsageError } from '../errors.js';
import { table } from '../output.js';
import { importFiles } from '../import-files.js';

/** `10.0.0.1:80`, `[fd00::1]:80` → IP and port; UsageError naming the flag otherwise. */
export function parseIpPort(raw: string, flag: string): { ip: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(raw.trim()) ?? /^([^:[\]]+):(\d{1,5})$/.exec(raw.trim());
  const ip = m ? canonicalAddr(m[1]!) : undefined;
  const port = m ? Number(m[2]) : NaN;
  if (!ip || !(port >= 1 && port <= 65535)) throw new UsageError(`${flag}: ${JSON.stringify(raw)} is not IP:PORT (e.g. 10.96.0.10:80 or [fd00::10]:80)`);
  return { ip, port };
}

/** The service ID of a positional argument or flag. */
export function parseServiceId(raw: string, what: string): number {
  const id = /^\d{1,5}$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!(id >= 1 && id <= 65535)) throw new UsageError(`${what}: ${JSON.stringify(raw)} is not a service ID (1..65535)`);
  return id;
}

const hostPort = (ip: string | undefined, port: number | undefined, proto: string | undefined): string =>
  `${ip?.includes(':') ? `[${ip}]` : (ip ?? '')}:${port ?? 0}/${(proto ?? 'tcp').toUpperCase()}`;

/** Cilium's `service list` table: ID, Frontend, Service Type, Backend (one a line, numbered, with its state), and the reconciliation status. */
export function renderServices(list: readonly Service[]): string {
  const rows = [...list]
    .sort((a, b) => (a.spec?.id ?? 0) - (b.spec?.id ?? 0))
    .map((s) => {
      const fe = s.spec?.['frontend-address'];
      const bes = s.spec?.['backend-addresses'] ?? [];
      const st = s.status?.['cellium-state'];
      return [
        String(s.spec?.id ?? ''),
        hostPort(fe?.ip, fe?.port, fe?.protocol),
        s.spec?.flags?.type ?? '',
        bes.length ? bes.map((b, i) => `${i + 1} => ${hostPort(b.ip, b.port, b.protocol)} (${b.state ?? 'active'})`) : [''],
        st ? `${st.state}${st.message ? `: ${st.message}` : ''}` : '',
      ];
    });
  return table(['ID', 'Frontend', 'Service Type', 'Backend', 'Status'], rows);
}

/** The import's result: each service with its frontends' IDs. */
export function renderImport(r: CelliumServiceImport): string {
  const lines = r.services.map((s) => `${s.service}: ${s.frontends.map((f) => `${f.id} ${f.address}`).join(', ') || 'no frontends'} (${s.backends} backends)`);
  for (const p of r.pending) lines.push(`${p}: backends kept until its Service is imported`);
  return lines.join('\n') + '\n';
}

/** The ServiceSpec of `service update`. */
export function updateSpec(opts: { id: string; frontend: string; backends?: string; protocol: string; type: string }): { id: number; spec: ServiceSpec } {
  const id = parseServiceId(opts.id, '--id');
  const fe = parseIpPort(opts.frontend, '--frontend');
  const protocol = opts.protocol.toLowerCase() as 'tcp' | 'udp';
  const backends = (opts.backends ?? '').split(',').map((s) => s.trim()).filter(Boolean).map((b) => parseIpPort(b, '--backends'));
  for (const b of backends) {
    if (b.ip.includes(':') !== fe.ip.includes(':')) throw new UsageError(`--backends: ${b.ip} is not of the frontend's address family`);
  }
  return {
    id,
    spec: {
      id,
      'frontend-address': { ip: fe.ip, port: fe.port, protocol, scope: 'external' },
      'backend-addresses': backends.map((b) => ({ ip: b.ip, port: b.port, protocol: protocol.toUpperCase(), state: 'active' as const })),
      flags: { type: opts.type as NonNullable<ServiceSpec['flags']>['type'] },
    },
  };
}

/** Registers the service commands. */
export const serviceCommands: CommandGroup = (program, rt) => {
  const service = program.command('service').description('manage services (load balancing)');

  service
    .command('list')
    .description('list the services: frontend, type, backends with their state, reconciliation status')
    .action(rt.action(async (ctx) => {
      const list = await ctx.client.listServices();
      ctx.print(list, renderServices);
    }));

  service
    .command('get')
    .description('show one service')
    .argument('<id>')
    .action(rt.action(async (ctx, id: string) => {
      const s = await ctx.client.getService(parseServiceId(id, 'ID'));
      ctx.print(s, (x) => renderServices([x]));
    }));

  service
    .command('update')
    .description('create or update the service with this ID')
    .requiredOption('--id <id>', 'service ID (1..65535)')
    .requiredOption('--frontend <ip:port>', 'frontend address, e.g. 10.96.0.10:80')
    .option('--backends <ip:port,...>', 'backend addresses, comma-separated (none: a service that rejects)')
    .addOption(new Option('--protocol <protocol>', 'layer-4 protocol').choices(['tcp', 'udp']).default('tcp'))
    .addOption(new Option('--type <type>', 'service type').choices(['ClusterIP', 'NodePort', 'ExternalIPs', 'LoadBalancer']).default('ClusterIP'))
    .action(rt.action(async (ctx, opts: { id: string; frontend: string; backends?: string; protocol: string; type: string }) => {
      const { id, spec } = updateSpec(opts);
      const created = await ctx.client.putService(id, spec);
      ctx.print({ id, created }, (r) => `${r.created ? 'Created' : 'Updated'} service with ID ${r.id}\n`);
    }));

  service
    .command('delete')
    .description('delete the services with these IDs, or every service with --all')
    .argument('[ids...]')
    .option('--all', 'delete every service')
    .action(rt.action(async (ctx, ids: string[], opts: { all?: boolean }) => {
      if (opts.all && ids.length) throw new UsageError('give either service IDs or --all, not both');
      if (!opts.all && !ids.length) throw new UsageError('give the IDs of the services to delete, or --all');
      const existing = (await ctx.client.listServices()).map((s) => s.spec?.id ?? 0).filter((id) => id > 0);
      const targets = opts.all ? existing : ids.map((i) => parseServiceId(i, 'ID'));
      // all or nothing as far as the CLI can: every ID is checked before the first is deleted
      const missing = targets.filter((id) => !existing.includes(id));
      if (missing.length) throw new CliFailure(`service ${missing.join(', ')} does not exist (cellium service list); nothing was deleted`);
      for (const id of targets) await ctx.client.deleteService(id);
      ctx.print({ deleted: targets }, (r) => `Deleted ${r.deleted.length} service(s)${r.deleted.length ? `: ${r.deleted.join(', ')}` : ''}\n`);
    }));

  service
    .command('import')
    .description('import Kubernetes Service and EndpointSlice manifests (YAML or JSON, several per file; - reads stdin)')
    .argument('<files...>')
    .action(rt.action(async (ctx, files: string[]) => {
      // several files are one import, all or nothing (import-files.ts)
      const all = await importFiles(ctx, files, (text) => ctx.client.importServices(text));
      ctx.print(all, renderImport);
    }));
};
