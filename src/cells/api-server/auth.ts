/**
 * Authentication of the TCP API (the unix socket keeps its file-permission model): a bearer token
 * read from --api-token-file, compared in constant time, and/or TLS client certificates verified
 * against --api-tls-client-ca-files (the TLS handshake refuses any other client). Everything is
 * read and checked when the server is made: a TCP listener without authentication, a token file
 * others can read, an empty or short token, a certificate without its key are refused with
 * ApiAuthConfigError, and the agent does not start.
 */
import { createHash, timingSafeEqual, X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { RequestHandler } from 'express';
import { isLoopbackHost } from '../../lib/loopback.js';
import type { ApiServerConfig, ListenAddress } from './config.js';
import { ApiAuthConfigError, HttpError } from './errors.js';

/** Shortest token accepted (characters). */
export const MIN_TOKEN_LENGTH = 16;

/** The TLS material of the TCP listener. */
export interface ApiTlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Client CAs: when set, clients must present a certificate they signed. */
  readonly ca?: readonly Buffer[];
}

/** How the TCP API authenticates its clients. */
export interface TcpAuth {
  /** The TLS listener's material; undefined: plain HTTP (a token on loopback only). */
  readonly tls?: ApiTlsMaterial;
  /** The bearer token every request must carry; undefined: client certificates alone. */
  readonly token?: Buffer;
}

/**
 * Reads a secret file (token, private key): refused when others may read or write it (any
 * permission bit for "other"), when it is not a regular file, or cannot be read.
 */
export function readSecretFile(flag: string, path: string): Buffer {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    throw new ApiAuthConfigError(flag, `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, 'give the path of an existing file');
  }
  if (!st.isFile()) throw new ApiAuthConfigError(flag, `${path} is not a regular file`, 'give the path of a file');
  if ((st.mode & 0o007) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(3, '0');
    throw new ApiAuthConfigError(flag, `${path} has mode ${mode}: every user of the machine may read it`, `chmod o-rwx ${path} (e.g. 0600, or 0640 for a group of operators)`);
  }
  return readPublicFile(flag, path);
}

/** Reads a file that need not be secret (a certificate). */
function readPublicFile(flag: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ApiAuthConfigError(flag, `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, 'give the path of a readable file');
  }
}

/** The token of --api-token-file: its text without surrounding whitespace, at least MIN_TOKEN_LENGTH visible ASCII characters. */
export function readTokenFile(path: string): Buffer {
  const text = readSecretFile('api-token-file', path).toString('utf8').trim();
  const fix = `write a random token of at least ${MIN_TOKEN_LENGTH} characters into it (e.g. head -c 32 /dev/urandom | base64 > ${path})`;
  if (text === '') throw new ApiAuthConfigError('api-token-file', `${path} is empty`, fix);
  if (!/^[\x21-\x7e]+$/.test(text)) throw new ApiAuthConfigError('api-token-file', `the token in ${path} has spaces, control or non-ASCII characters`, fix);
  if (text.length < MIN_TOKEN_LENGTH) throw new ApiAuthConfigError('api-token-file', `the token in ${path} has ${text.length} characters, fewer than ${MIN_TOKEN_LENGTH}`, fix);
  return Buffer.from(text, 'ascii');
}

/**
 * The authentication of a TCP listener on `where` from the configuration; throws
 * ApiAuthConfigError when it is missing or unusable.
 */
export function loadTcpAuth(cfg: Pick<ApiServerConfig, 'apiTlsCertFile' | 'apiTlsKeyFile' | 'apiTlsClientCaFiles' | 'apiTokenFile'>, where: ListenAddress): TcpAuth {
  const cas = cfg.apiTlsClientCaFiles;
  if (!cfg.apiTokenFile && cas.length === 0) {
    throw new ApiAuthConfigError(
      'api-listen-address',
      'the TCP API would serve every operation (policy, services, endpoints) to anyone who reaches the port, unauthenticated',
      'give --api-token-file FILE (clients send it as a bearer token) or --api-tls-client-ca-files CA.pem with --api-tls-cert-file and --api-tls-key-file (clients present a certificate), or leave --api-listen-address empty and use the unix socket',
    );
  }
  if (Boolean(cfg.apiTlsCertFile) !== Boolean(cfg.apiTlsKeyFile)) {
    const [given, missing] = cfg.apiTlsCertFile ? ['api-tls-cert-file', 'api-tls-key-file'] : ['api-tls-key-file', 'api-tls-cert-file'];
    throw new ApiAuthConfigError(missing, `--${given} is given without it`, `give both --api-tls-cert-file and --api-tls-key-file`);
  }
  if (cas.length > 0 && !cfg.apiTlsCertFile) {
    throw new ApiAuthConfigError('api-tls-client-ca-files', 'client certificates need the TCP API to serve TLS', 'give --api-tls-cert-file and --api-tls-key-file too');
  }
  if (cfg.apiTokenFile && !cfg.apiTlsCertFile && !isLoopbackHost(where.host)) {
    throw new ApiAuthConfigError(
      'api-token-file',
      `over plain HTTP on ${where.host || 'every interface'} the token would cross the network in clear text`,
      'give --api-tls-cert-file and --api-tls-key-file, or listen on loopback (127.0.0.1:PORT)',
    );
  }
  const tls: ApiTlsMaterial | undefined = cfg.apiTlsCertFile
    ? {
        cert: readPublicFile('api-tls-cert-file', cfg.apiTlsCertFile),
        key: readSecretFile('api-tls-key-file', cfg.apiTlsKeyFile),
        ...(cas.length ? { ca: cas.map((f) => readPublicFile('api-tls-client-ca-files', f)) } : {}),
      }
    : undefined;
  if (tls) checkTlsMaterial(tls);
  return { ...(tls ? { tls } : {}), ...(cfg.apiTokenFile ? { token: readTokenFile(cfg.apiTokenFile) } : {}) };
}

/** Loads the TLS material the way the listener will, so a bad PEM or a key of another certificate stops the agent here, naming the flags. */
function checkTlsMaterial(tls: ApiTlsMaterial): void {
  try {
    createSecureContext({ cert: tls.cert, key: tls.key });
  } catch (err) {
    throw new ApiAuthConfigError('api-tls-cert-file', `the certificate and key cannot be used (${(err as Error).message})`, 'give a PEM certificate in --api-tls-cert-file and its PEM private key in --api-tls-key-file');
  }
  for (const ca of tls.ca ?? []) {
    try {
      // TLS would skip a file with no certificate in it: then no client could ever authenticate
      if (!new X509Certificate(ca).ca) throw new Error('it is not a CA certificate (basicConstraints CA:FALSE)');
    } catch (err) {
      throw new ApiAuthConfigError('api-tls-client-ca-files', `a CA certificate cannot be used (${(err as Error).message})`, 'give PEM CA certificates');
    }
  }
}

const digest = (b: Buffer | string): Buffer => createHash('sha256').update(b).digest();

/** Whether `given` is `token`, in time independent of where they differ (and of their lengths: both are hashed first). */
export function tokenMatches(token: Buffer, given: string): boolean {
  return timingSafeEqual(digest(token), digest(Buffer.from(given, 'utf8')));
}

/** Middleware refusing (401, WWW-Authenticate: Bearer) a request without `Authorization: Bearer <token>`. */
export function bearerAuth(token: Buffer): RequestHandler {
  const challenge = { 'www-authenticate': 'Bearer realm="cellium-agent"' };
  return (req, res, next) => {
    const m = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
    if (!m) return sendUnauthorized(res, new HttpError(401, 'the TCP API needs authentication: send the agent\'s token as "Authorization: Bearer TOKEN" (cellium --token-file FILE)', challenge));
    if (!tokenMatches(token, m[1]!)) {
      return sendUnauthorized(res, new HttpError(401, 'the bearer token is not the agent\'s (--api-token-file): send the token of that file', { ...challenge, 'www-authenticate': `${challenge['www-authenticate']}, error="invalid_token"` }));
    }
    next();
  };
}

/** Answers 401 in Cilium's Error model and closes the connection (no further request of an unauthenticated client is read). */
function sendUnauthorized(res: Parameters<RequestHandler>[1], err: HttpError): void {
  res.status(err.status).set({ ...err.headers, connection: 'close' }).json(err.message);
}
