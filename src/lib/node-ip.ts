/** The node's own address: `--node-ip`, or the first non-loopback IPv4 address of the host. */
import { networkInterfaces } from 'node:os';

/** The configured node IP, or the first non-internal IPv4 address (127.0.0.1 when there is none). */
export function detectNodeIP(configured: string): string {
  if (configured) return configured;
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
