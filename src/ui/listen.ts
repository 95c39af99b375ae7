/**
 * Where the flow page listens: `HOST:PORT`, `[IPv6]:PORT` or `PORT` (127.0.0.1), on loopback only.
 * The page shows every flow of the node (pods, labels, addresses) without authentication, so a
 * non-loopback address is refused, never served.
 */
import { isIP } from 'node:net';
import { UiListenError } from './errors.js';

/** A loopback address and port to listen on (port 0: any free port). */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** Hubble UI's port. */
export const DEFAULT_UI_PORT = 12000;

/** Whether `host` (an address or `localhost`) is a loopback address. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(h);
  return false;
}

/** Parses `--address`; throws UiListenError naming the value and the fix. */
export function parseListenAddress(value: string): ListenAddress {
  const v = value.trim();
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(v) ?? (/^(\d{1,5})$/.test(v) ? [v, undefined, '127.0.0.1', v] : null);
  if (!m) throw new UiListenError(value, 'expected HOST:PORT, [IPv6]:PORT or PORT (e.g. 127.0.0.1:12000)');
  const host = (m[1] ?? m[2] ?? '').trim();
  const port = Number(m[3]);
  if (port > 65535) throw new UiListenError(value, 'the port must be 0-65535 (0: any free port)');
  if (host === '') throw new UiListenError(value, 'give a loopback host (127.0.0.1:PORT or [::1]:PORT): an empty host would listen on every address');
  if (!isLoopback(host)) {
    throw new UiListenError(value, `${host} is not a loopback address: the page shows the node's flows without authentication, so it listens on loopback only (127.0.0.1, [::1] or localhost); to open it from another machine, forward the port (ssh -L ${port || DEFAULT_UI_PORT}:127.0.0.1:${port || DEFAULT_UI_PORT} NODE)`);
  }
  return { host, port };
}
