/**
 * HTTP/1.1 to the agent over its unix socket (node:http with socketPath) or over TCP
 * (--api-listen-address): plain HTTP, or HTTPS with the agent's CA and a client certificate, and
 * a bearer token when given. JSON in and out; errors become ApiError / AgentUnreachableError.
 */
import { statSync } from 'node:fs';
import { Agent, request as httpRequest, STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import { Agent as TlsAgent, request as httpsRequest } from 'node:https';
import { AgentUnreachableError, ApiError, ProtocolError } from './errors.js';
import { API_BASE_PATH } from './spec-document.js';
import { startAgentHint } from './socket-path.js';

/** TLS towards a TCP agent (`https://` base URLs): PEM contents, not paths. */
export interface ApiTlsOptions {
  /** CAs the agent's certificate must be signed by (default: the system's). */
  readonly ca?: readonly Buffer[];
  /** A client certificate and its key (agents with --api-tls-client-ca-files want one). */
  readonly cert?: Buffer;
  readonly key?: Buffer;
  /** The name the agent's certificate must carry (default: the URL's host). */
  readonly servername?: string;
}

/** An agent on TCP: its base URL (`http://127.0.0.1:9234`, `https://node1:9234`), TLS options and bearer token. */
export interface TcpApiTarget {
  readonly baseUrl: string;
  readonly tls?: ApiTlsOptions;
  /** Sent as `Authorization: Bearer TOKEN` (the agent's --api-token-file). */
  readonly token?: string;
}

/** Where the agent listens: a unix socket path, or TCP. */
export type ApiTarget = { readonly socketPath: string } | TcpApiTarget;

/** A query value: repeated keys for arrays; undefined values are left out. */
export type QueryValue = string | number | boolean | readonly (string | number)[] | undefined;

/** Options of one request. */
export interface RequestOptions {
  readonly query?: Readonly<Record<string, QueryValue>>;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as JSON (`application/json`) unless `contentType` says otherwise and it is a string. */
  readonly body?: unknown;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /** Gives up after this long (default: the transport's, 60 s); 0: never (streams). */
  readonly timeoutMs?: number;
  /**
   * A streamed answer (application/x-ndjson): each line of a 2xx body is handed over as it
   * arrives, and the request resolves (body undefined) when the agent ends the stream.
   */
  readonly onLine?: (line: string) => void;
}

/** An answer: status, headers and the body (parsed JSON, text, or undefined when empty). */
export interface ApiResponse<T = unknown> {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: T;
}

/** Options of a transport. */
export interface TransportOptions {
  readonly timeoutMs?: number;
}

/** Sends requests to one agent; reuses connections until close(). */
export class Transport {
  private readonly agent: Agent;
  private readonly https: boolean;
  private readonly timeoutMs: number;

  constructor(
    readonly target: ApiTarget,
    opts: TransportOptions = {},
  ) {
    this.https = 'baseUrl' in target && target.baseUrl.startsWith('https:');
    const tls = 'baseUrl' in target ? target.tls : undefined;
    this.agent = this.https
      ? new TlsAgent({ keepAlive: true, maxSockets: 16, ...(tls?.ca ? { ca: [...tls.ca] } : {}), ...(tls?.cert ? { cert: tls.cert } : {}), ...(tls?.key ? { key: tls.key } : {}), ...(tls?.servername ? { servername: tls.servername } : {}) })
      : new Agent({ keepAlive: true, maxSockets: 16 });
    this.timeoutMs = opts.timeoutMs ?? 60_000;
  }

  /** `unix socket /path` or the base URL, for messages. */
  describe(): string {
    return 'socketPath' in this.target ? `unix socket ${this.target.socketPath}` : this.target.baseUrl;
  }

  /**
   * Sends `method` to `path` (relative to /v1, e.g. `/endpoint/12`; path parameters must already be
   * percent-encoded). Resolves with any status; rejects with AgentUnreachableError when the agent
   * cannot be reached and ProtocolError when a JSON answer does not parse.
   */
  request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const url = API_BASE_PATH + path + queryString(opts.query);
    let payload: string | undefined;
    const token = 'token' in this.target ? this.target.token : undefined;
    const headers: Record<string, string> = { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...opts.headers };
    if (opts.body !== undefined) {
      const type = opts.contentType ?? 'application/json';
      payload = type === 'application/json' || typeof opts.body !== 'string' ? JSON.stringify(opts.body) : opts.body;
      headers['content-type'] = type;
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const where =
      'socketPath' in this.target
        ? { socketPath: this.target.socketPath }
        : (() => {
            const u = new URL(this.target.baseUrl);
            return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(u.port || (this.https ? 443 : 80)) };
          })();
    const send = this.https ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        { ...where, method: method.toUpperCase(), path: url, headers, agent: this.agent, signal: opts.signal },
        (res) => {
          const status = res.statusCode ?? 0;
          if (opts.onLine && status >= 200 && status < 300) {
            let rest = '';
            res.setEncoding('utf8');
            res.on('data', (text: string) => {
              const lines = (rest + text).split('\n');
              rest = lines.pop() ?? '';
              for (const line of lines) if (line) opts.onLine!(line);
            });
            res.on('error', reject);
            res.on('end', () => {
              if (rest) opts.onLine!(rest);
              resolve({ status, headers: res.headers, body: undefined as T });
            });
            return;
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const isJson = /^application\/(.+\+)?json/.test(res.headers['content-type'] ?? '');
            if (!isJson || text === '') return resolve({ status: res.statusCode ?? 0, headers: res.headers, body: (text === '' ? undefined : text) as T });
            try {
              resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) as T });
            } catch {
              reject(new ProtocolError(`${method.toUpperCase()} ${url}: the agent answered ${res.statusCode} with broken JSON`));
            }
          });
        },
      );
      const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
      let timedOut = false;
      if (timeoutMs > 0) {
        req.setTimeout(timeoutMs, () => {
          timedOut = true;
          req.destroy();
        });
      }
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.name === 'AbortError') return reject(err);
        if (timedOut) return reject(new ProtocolError(`${method.toUpperCase()} ${url}: no answer from the agent at ${this.describe()} within ${timeoutMs} ms`));
        const code = err.code ?? 'EIO';
        const notSocket = code === 'ECONNREFUSED' && 'socketPath' in this.target ? nonSocketKind(this.target.socketPath) : undefined;
        if (notSocket) {
          return reject(new AgentUnreachableError(this.describe(), 'ENOTSOCK', `it is ${notSocket}; give the path of the agent's socket (its --socket-path)`));
        }
        if (this.https && isTlsFailure(code, err.message)) {
          return reject(new AgentUnreachableError(this.describe(), code, `TLS with the agent failed (${err.message}): give the CA of the agent's certificate (--tls-ca-cert-files), and a client certificate it trusts (--tls-client-cert-file, --tls-client-key-file)`));
        }
        if (['ENOENT', 'ECONNREFUSED', 'EACCES', 'EPERM', 'ENOTSOCK', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET'].includes(code)) {
          return reject(new AgentUnreachableError(this.describe(), code, this.hint()));
        }
        reject(err);
      });
      req.end(payload);
    });
  }

  /** Closes idle connections. */
  close(): void {
    this.agent.destroy();
  }

  private hint(): string {
    if ('socketPath' in this.target) return startAgentHint(this.target.socketPath);
    const u = new URL(this.target.baseUrl);
    return `start the agent with \`cellium-agent --api-listen-address ${u.host || this.target.baseUrl} --api-token-file FILE\` (or TLS client certificates, see docs/operations.md)`;
  }
}

/**
 * Whether a connection error is TLS refusing (a certificate not trusted, a name that differs, the
 * agent refusing the client's certificate: an alert, or the connection reset in the handshake).
 */
function isTlsFailure(code: string, message: string): boolean {
  return /^ERR_(SSL|TLS)_|CERT|SELF_SIGNED|UNABLE_TO_|^ECONNRESET$|^EPROTO$/.test(code) || /alert|certificate|handshake/i.test(message);
}

/** What sits at `path` when it exists and is not a socket (`a regular file`, `a directory`); else undefined. */
function nonSocketKind(path: string): string | undefined {
  try {
    const st = statSync(path);
    if (st.isSocket()) return undefined;
    return st.isFile() ? 'a regular file' : st.isDirectory() ? 'a directory' : 'a special file';
  } catch {
    return undefined;
  }
}

/** The ApiError for an error answer: the server's message (a JSON string, or a ValidationError). */
export function errorFromResponse(res: ApiResponse, what: string): ApiError {
  const retry = Number(res.headers['retry-after']);
  const retryAfter = Number.isFinite(retry) ? retry : undefined;
  const b = res.body;
  if (typeof b === 'string' && b.trim() !== '') return new ApiError(res.status, b.trim(), undefined, undefined, retryAfter);
  if (typeof b === 'object' && b !== null && 'error' in b) {
    const e = (b as { error: unknown }).error;
    if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string') {
      const v = e as { message: string; field?: string; expected?: string };
      return new ApiError(res.status, v.message, v.field, v.expected, retryAfter);
    }
    if (typeof e === 'string') return new ApiError(res.status, e, undefined, undefined, retryAfter);
  }
  return new ApiError(res.status, `${what}: ${res.status} ${STATUS_CODES[res.status] ?? 'error'}`, undefined, undefined, retryAfter);
}

function queryString(query: RequestOptions['query']): string {
  if (!query) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    for (const item of Array.isArray(v) ? v : [v]) q.append(k, String(item));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
