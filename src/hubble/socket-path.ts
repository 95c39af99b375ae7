/** Where the Hubble socket is by default: hubble.sock beside the agent API's default socket. */
import { dirname, join } from 'node:path';
import { defaultSocketPath, type SocketPathContext } from '../api/socket-path.js';

/** The default Hubble socket: /var/run/cellium/hubble.sock as root (Cilium: /var/run/cilium/hubble.sock). */
export function defaultHubbleSocketPath(ctx: SocketPathContext = {}): string {
  return join(dirname(defaultSocketPath(ctx)), 'hubble.sock');
}
