/**
 * CIDR identity labels, Cilium's way: `cidr:<prefix>` with `:` written as `-` for IPv6
 * (`cidr:fd00--/64`), plus `reserved:world`.
 */
import { formatCidr, parseCidr, type Cidr } from '../../lib/addr.js';
import type { Label } from '../../lib/labels.js';

/** The `cidr:` label of a CIDR (canonical, host bits cleared). Throws a plain Error on bad input. */
export function cidrLabel(cidr: string | Cidr): Label {
  const c = typeof cidr === 'string' ? parseCidr(cidr) : cidr;
  return { source: 'cidr', key: formatCidr(c).replace(/:/g, '-'), value: '' };
}

/** The CIDR a `cidr:` label stands for, or undefined for any other label. */
export function cidrOfLabel(l: Label): Cidr | undefined {
  if (l.source !== 'cidr') return undefined;
  try {
    return parseCidr(l.key.includes('.') ? l.key : l.key.replace(/-/g, ':'));
  } catch {
    return undefined;
  }
}
