/**
 * Configuration of the API: the router's (`--api-rate-limit` in Cilium's syntax,
 * `--enable-api-rate-limit`, `--api-max-body-bytes`) and the server's listeners (`--socket-path`,
 * `--api-listen-address`, no TCP unless set, loopback when no host is given) with the TCP
 * listener's authentication (`--api-tls-cert-file`, `--api-tls-key-file`,
 * `--api-tls-client-ca-files` after Cilium's `--hubble-tls-*`, and `--api-token-file`).
 */
import { bool, int, list, string, type Field, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';
import { defaultSocketPath } from '../../api/socket-path.js';
import { ListenAddressError } from './errors.js';
import { parseApiRateLimit, resolveLimits } from './ratelimit/params.js';

/** A parsed `HOST:PORT` (host empty for every interface). */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** Parses `HOST:PORT`, `:PORT` or `[v6]:PORT`; throws ListenAddressError naming the flag. */
export function parseListenAddress(flag: string, raw: string): ListenAddress {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(raw.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new ListenAddressError(flag, raw);
  return { host: m[1] ?? m[2] ?? '', port };
}

function listenField(flag: string, help: string): Field<string> {
  return {
    ...string('', help),
    parse(raw: unknown): string {
      const s = typeof raw === 'string' ? raw.trim() : typeof raw === 'number' ? `:${raw}` : '';
      if (typeof raw !== 'string' && typeof raw !== 'number') throw new Error(`expected HOST:PORT, got ${JSON.stringify(raw)}`);
      if (s !== '') parseListenAddress(flag, s);
      return s;
    },
  };
}

/** `--api-rate-limit`: option text per API name; checked in full (unknown options, bad values) when parsed. */
const rateLimitField: Field<Readonly<Record<string, string>>> = {
  kind: 'string',
  default: {},
  help: 'API rate limiting, Cilium syntax (e.g. endpoint-create=rate-limit:10/s,rate-burst:20,max-parallel-requests:16)',
  parse(raw: unknown) {
    const user = parseApiRateLimit(raw);
    resolveLimits(user);
    return user;
  },
  format: (v) => Object.entries(v).map(([k, o]) => `${k}=${o}`).join(','),
};

/** Schema of the API router's configuration (rate limits, body size): what an embedding app configures too. */
export const apiRouterConfigSchema = {
  apiRateLimit: rateLimitField,
  enableApiRateLimit: bool(true, 'Rate limit the endpoint APIs (see --api-rate-limit)'),
  apiMaxBodyBytes: int(2 * 1024 * 1024, 'Largest request body accepted, in bytes', { min: 1024 }),
};

/** The resolved API router configuration. */
export type ApiRouterConfig = ValuesOf<typeof apiRouterConfigSchema>;

/** Token for the API router configuration. */
export const ApiRouterConfigToken = token<ApiRouterConfig>('ApiRouterConfig');

/** Schema of the API server configuration (where it listens). */
export const apiServerConfigSchema = {
  socketPath: {
    ...string(defaultSocketPath(), 'Unix socket the API is served on (the cellium CLI uses the same default and CELLIUM_SOCKET_PATH)'),
    parse(raw: unknown): string {
      if (typeof raw !== 'string' || raw.trim() === '') throw new Error(`expected a socket path, got ${JSON.stringify(raw)}`);
      return raw.trim();
    },
  },
  apiListenAddress: listenField(
    'api-listen-address',
    'Also serve the API over TCP on HOST:PORT (empty: unix socket only; :PORT is 127.0.0.1:PORT, 0.0.0.0:PORT every interface); needs --api-token-file or --api-tls-client-ca-files',
  ),
  apiTlsCertFile: string('', 'TLS certificate (PEM) the TCP API serves with (with --api-tls-key-file)'),
  apiTlsKeyFile: string('', 'Private key (PEM) of --api-tls-cert-file; must not be readable by others'),
  apiTlsClientCaFiles: list([], 'CA certificates (PEM, comma-separated files): TCP API clients must present a certificate signed by one of them'),
  apiTokenFile: string('', 'File holding the bearer token TCP API clients must send (Authorization: Bearer); must not be readable by others'),
};

/** The resolved API server configuration. */
export type ApiServerConfig = ValuesOf<typeof apiServerConfigSchema>;

/** Token for the API server configuration. */
export const ApiServerConfigToken = token<ApiServerConfig>('ApiServerConfig');
