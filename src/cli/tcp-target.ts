/**
 * The TCP agent the CLI talks to with `-H/--host`: the base URL, the bearer token of
 * `--token-file`, and for `https://` the agent's CA (`--tls-ca-cert-files`), a client certificate
 * (`--tls-client-cert-file`, `--tls-client-key-file`) and the name to check (`--tls-server-name`),
 * named after the hubble CLI's flags. Files are read here; each problem is a UsageError naming the flag.
 */
import { readFileSync } from 'node:fs';
import type { TcpApiTarget } from '../api/transport.js';
import { isLoopbackHost } from '../lib/loopback.js';
import { parseHost } from './args.js';
import { UsageError } from './errors.js';

/** The global options that make the TCP target. */
export interface TcpTargetOptions {
  readonly host?: string;
  readonly tokenFile?: string;
  readonly tlsCaCertFiles?: string;
  readonly tlsClientCertFile?: string;
  readonly tlsClientKeyFile?: string;
  readonly tlsServerName?: string;
}

function readFlagFile(flag: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new UsageError(`--${flag} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/** The token of `--token-file`: the file's text without surrounding whitespace; a UsageError when empty. */
export function readToken(path: string): string {
  const token = readFlagFile('token-file', path).toString('utf8').trim();
  if (token === '') throw new UsageError(`--token-file ${path}: the file is empty; give the file the agent reads with --api-token-file`);
  if (!/^[\x21-\x7e]+$/.test(token)) throw new UsageError(`--token-file ${path}: the token has spaces, control or non-ASCII characters; give the file the agent reads with --api-token-file`);
  return token;
}

/**
 * The TCP target of the options; a UsageError for a TLS or token flag that has no use (no --host,
 * or TLS flags with http://), and for a token over plain http to a host that is not loopback.
 */
export function tcpTarget(o: TcpTargetOptions): TcpApiTarget | undefined {
  const tlsFlags = (
    [
      ['tls-ca-cert-files', o.tlsCaCertFiles],
      ['tls-client-cert-file', o.tlsClientCertFile],
      ['tls-client-key-file', o.tlsClientKeyFile],
      ['tls-server-name', o.tlsServerName],
    ] as const
  ).filter(([, v]) => v !== undefined);
  if (!o.host) {
    const given = [...(o.tokenFile !== undefined ? ['token-file'] : []), ...tlsFlags.map(([f]) => f)];
    if (given.length) throw new UsageError(`--${given[0]} is for an agent on TCP: give -H https://HOST:PORT (or http://127.0.0.1:PORT) too`);
    return undefined;
  }
  const baseUrl = parseHost(o.host);
  const https = baseUrl.startsWith('https:');
  if (!https && tlsFlags.length) throw new UsageError(`--${tlsFlags[0]![0]} needs TLS: give -H https://HOST:PORT`);
  if ((o.tlsClientCertFile === undefined) !== (o.tlsClientKeyFile === undefined)) {
    throw new UsageError('--tls-client-cert-file and --tls-client-key-file go together: give both');
  }
  if (!https && o.tokenFile !== undefined && !isLoopbackHost(new URL(baseUrl).hostname)) {
    throw new UsageError(`--token-file over ${baseUrl} would send the token in clear text: give -H https://HOST:PORT (plain http only to 127.0.0.1, ::1 or localhost)`);
  }
  const cas = o.tlsCaCertFiles?.split(',').map((f) => f.trim()).filter(Boolean);
  const tls = https
    ? {
        ...(cas?.length ? { ca: cas.map((f) => readFlagFile('tls-ca-cert-files', f)) } : {}),
        ...(o.tlsClientCertFile !== undefined ? { cert: readFlagFile('tls-client-cert-file', o.tlsClientCertFile) } : {}),
        ...(o.tlsClientKeyFile !== undefined ? { key: readFlagFile('tls-client-key-file', o.tlsClientKeyFile) } : {}),
        ...(o.tlsServerName ? { servername: o.tlsServerName } : {}),
      }
    : undefined;
  return { baseUrl, ...(tls ? { tls } : {}), ...(o.tokenFile !== undefined ? { token: readToken(o.tokenFile) } : {}) };
}
