/** `cellium ipam`: the node's IP pools and allocations; `ipam allocate|release` for debugging. */
import type { IPAMResponse, StatusResponse } from '../../api/models.js';
import type { CommandGroup } from '../context.js';
import { keyValues, table } from '../output.js';

/** The pools and the allocation table of /healthz's IPAM status. */
export function renderIpam(ipam: NonNullable<StatusResponse['ipam']>): string {
  const allocs = Object.entries(ipam.allocations ?? {}).sort((a, b) => a[0].localeCompare(b[0], undefined, { numeric: true }));
  return (
    keyValues([
      ['IPv4 pools', ipam.ipv4?.length ? ipam.ipv4 : undefined],
      ['IPv6 pools', ipam.ipv6?.length ? ipam.ipv6 : undefined],
      ['Status', ipam.status],
      ['Allocated', allocs.length],
    ]) +
    (allocs.length ? '\n' + table(['IP', 'Owner'], allocs) : '')
  );
}

/** An allocation's addresses. */
export function renderAllocation(r: IPAMResponse): string {
  return keyValues([
    ['IPv4', r.ipv4 ? `${r.ipv4.ip ?? ''}${r.ipv4.gateway ? ` (gateway ${r.ipv4.gateway})` : ''}` : undefined],
    ['IPv6', r.ipv6 ? `${r.ipv6.ip ?? ''}${r.ipv6.gateway ? ` (gateway ${r.ipv6.gateway})` : ''}` : undefined],
    ['Expiration UUID', r.ipv4?.['expiration-uuid'] ?? r.ipv6?.['expiration-uuid']],
  ]);
}

/** Registers the ipam commands. */
export const ipamCommands: CommandGroup = (program, rt) => {
  const ipam = program.command('ipam').description("show the node's IP pools and allocations");

  ipam
    .command('list', { isDefault: true })
    .description('show the pools and every allocated IP with its owner (the default)')
    .action(
      rt.action(async (ctx) => {
        const s = await ctx.client.status();
        ctx.print(s.ipam ?? {}, renderIpam);
      }),
    );

  ipam
    .command('allocate')
    .description('allocate the next free IP, or the given one')
    .argument('[ip]')
    .option('--family <family>', 'ipv4 or ipv6 (next free IP only)')
    .option('--owner <owner>', 'who holds the address', 'cellium-cli')
    .option('--expiration', 'expire unless an endpoint confirms it')
    .action(
      rt.action(async (ctx, ip: string | undefined, opts: { family?: 'ipv4' | 'ipv6'; owner: string; expiration?: boolean }) => {
        if (ip) {
          await ctx.client.ipamAllocateIP(ip, { owner: opts.owner });
          ctx.print({ ip, owner: opts.owner }, (r) => `Allocated ${r.ip} to ${r.owner}\n`);
          return;
        }
        const r = await ctx.client.ipamAllocate({ family: opts.family, owner: opts.owner, expiration: opts.expiration === true });
        ctx.print(r, renderAllocation);
      }),
    );

  ipam
    .command('release')
    .description('release an allocated IP')
    .argument('<ip>')
    .action(
      rt.action(async (ctx, ip: string) => {
        await ctx.client.ipamRelease(ip);
        ctx.print({ ip, released: true }, (r) => `Released ${r.ip}\n`);
      }),
    );
};
