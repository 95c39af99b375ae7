/** `cellium ipam`: the node's IP pools and every address in use; `ipam allocate|release` for debugging. */
import type { CelliumIPAM, IPAMResponse } from '../../api/models.js';
import type { CommandGroup } from '../context.js';
import { UsageError } from '../errors.js';
import { keyValues, table } from '../output.js';

const FAMILIES = ['ipv4', 'ipv6'] as const;

/** The `--family` value, checked before anything is sent. */
function family(v: string | undefined): 'ipv4' | 'ipv6' | undefined {
  if (v !== undefined && !(FAMILIES as readonly string[]).includes(v)) throw new UsageError(`invalid --family "${v}": expected ipv4 or ipv6`);
  return v as 'ipv4' | 'ipv6' | undefined;
}

/** GET /ipam as tables: the summary, the pools (CIDR, size, used, free), then every address in use. */
export function renderIpam(ipam: CelliumIPAM): string {
  const pools = table(
    ['Pool', 'Family', 'CIDR', 'Gateway', 'Size', 'Used', 'Free'],
    ipam.pools.map((p) => [p.name, p.family, p.cidr, p.gateway, p.size, p.used, p.free]),
  );
  const addresses = table(
    ['IP', 'Owner', 'Endpoint', 'Expires', 'Pool'],
    ipam.addresses.map((a) => [
      a.ip, a.owner, a['endpoint-id'] ?? '-', a.expiring ? (a.expires ?? 'yes') : 'no', a['out-of-pool'] ? 'OUT OF POOL' : (a.pool ?? '-'),
    ]),
  );
  const outside = ipam.addresses.filter((a) => a['out-of-pool']).length;
  return (
    keyValues([
      ['Status', ipam.status],
      ['Out of pool', outside ? `${outside} (endpoint addresses outside every pool: recorded, never handed out)` : undefined],
    ]) +
    '\n' + (ipam.pools.length ? pools : 'No pool configured (--ipv4-range, --ipv6-range).\n') +
    '\n' + (ipam.addresses.length ? addresses : 'No address in use.\n')
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
    .description('show the pools (CIDR, size, used, free) and every address in use: owner, endpoint, expiry, out-of-pool (the default)')
    .option('--family <family>', 'only ipv4 or ipv6')
    .action(
      rt.action(async (ctx, opts: { family?: string }) => {
        ctx.print(await ctx.client.ipam({ family: family(opts.family) }), renderIpam);
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
      rt.action(async (ctx, ip: string | undefined, opts: { family?: string; owner: string; expiration?: boolean }) => {
        if (ip) {
          await ctx.client.ipamAllocateIP(ip, { owner: opts.owner });
          ctx.print({ ip, owner: opts.owner }, (r) => `Allocated ${r.ip} to ${r.owner}\n`);
          return;
        }
        const r = await ctx.client.ipamAllocate({ family: family(opts.family), owner: opts.owner, expiration: opts.expiration === true });
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
