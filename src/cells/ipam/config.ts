/** Configuration of the IPAM cell: the node's pools and how often unconfirmed allocations expire. */
import { duration, oneOf, string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';
import { formatCidr, parseCidr } from '../../lib/addr.js';
import { badRange } from './errors.js';
import { IPAM_MODES, type Family } from './types.js';

/** Smallest pools: IPv4 needs network, gateway, broadcast and one address (/30); IPv6 network, gateway and one (/126). */
const MAX_PREFIX: Record<Family, number> = { ipv4: 30, ipv6: 126 };

function rangeField(family: Family, def: string, help: string) {
  const flag = `${family}-range`;
  return {
    ...string(def, help),
    parse(raw: unknown): string {
      if (typeof raw !== 'string') throw badRange(flag, String(raw), 'expected a CIDR string');
      const s = raw.trim();
      if (s === '' && family === 'ipv6') return '';
      let c;
      try {
        c = parseCidr(s);
      } catch (err) {
        throw badRange(flag, s, (err as Error).message);
      }
      if (c.family !== family) throw badRange(flag, s, `expected an ${family} CIDR`);
      if (!s.includes('/')) throw badRange(flag, s, 'expected a prefix length (e.g. /16)');
      if (c.prefix > MAX_PREFIX[family]) throw badRange(flag, s, `the pool is too small: use a prefix of /${MAX_PREFIX[family]} or shorter`);
      return formatCidr(c);
    },
  };
}

/** Schema of the IPAM configuration. */
export const ipamConfigSchema = {
  ipam: oneOf(IPAM_MODES, 'cluster-pool', "IPAM mode: cluster-pool (pod addresses from this node's --ipv4-range/--ipv6-range) or delegated-plugin (from the IPAM plugin of the CNI network configuration's ipam section)"),
  ipv4Range: rangeField('ipv4', '10.200.0.0/16', 'IPv4 pool of this node (CIDR); the first usable address is the gateway'),
  ipv6Range: rangeField('ipv6', '', 'IPv6 pool of this node (CIDR); empty for none'),
  ipamExpirationInterval: duration('5s', 'How often allocations that were never confirmed are checked for expiry'),
};

/** The resolved IPAM configuration. */
export type IPAMConfig = ValuesOf<typeof ipamConfigSchema>;

/** Token for the IPAM configuration. */
export const IPAMConfigToken = token<IPAMConfig>('IPAMConfig');
