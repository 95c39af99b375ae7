/**
 * The API server: the agent's express application (the API router) on the unix socket (always)
 * and on TCP when --api-listen-address is set (loopback unless a host is given), there only with
 * authentication (auth.ts: a bearer token, TLS client certificates, or both; checked when the
 * server is made, so an agent configured without it does not start). Started and stopped by the
 * hive's lifecycle.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { Observable } from 'rxjs';
import type { Lifecycle } from '../../hive/lifecycle.js';
import type { Logger } from '../../hive/logger.js';
import { createApiApp, createApiHttpServer } from './app.js';
import { bearerAuth, loadTcpAuth, type TcpAuth } from './auth.js';
import { parseListenAddress, type ApiServerConfig, type ListenAddress } from './config.js';
import { ShuttingDownError } from './errors.js';
import { prepareSocket, removeSocket, restrictSocket } from './socket.js';
import type { ApiRouter, ApiServer, RequestRecord } from './types.js';

/** Where `--api-listen-address :PORT` listens: loopback (Cilium's `:PORT` means every interface; here it has to be asked for). */
const LOOPBACK = '127.0.0.1';

/** The API server of the agent. */
export class ApiServerImpl implements ApiServer {
  private readonly app: Express;
  private readonly servers: Server[] = [];
  private tcp?: AddressInfo;
  /** Where TCP listens and how its clients authenticate (read and checked here: a bad setup stops the agent before it starts). */
  private readonly tcpListener?: { readonly at: ListenAddress; readonly auth: TcpAuth; readonly app: Express };

  constructor(
    private readonly cfg: ApiServerConfig,
    private readonly api: ApiRouter,
    private readonly log: Logger,
    lc: Lifecycle,
  ) {
    this.app = createApiApp(api.router);
    if (cfg.apiListenAddress) {
      const parsed = parseListenAddress('api-listen-address', cfg.apiListenAddress);
      const at = { host: parsed.host || LOOPBACK, port: parsed.port };
      const auth = loadTcpAuth(cfg, at);
      this.tcpListener = { at, auth, app: auth.token ? createApiApp(api.router, bearerAuth(auth.token)) : this.app };
    }
    lc.append({ name: 'api-server', onStart: () => this.start(), onStop: () => this.stop() });
  }

  /** See ApiServer. */
  get socketPath(): string {
    return this.cfg.socketPath;
  }

  /** See ApiServer. */
  tcpAddress(): string | undefined {
    return this.tcp ? `${this.tcp.family === 'IPv6' ? `[${this.tcp.address}]` : this.tcp.address}:${this.tcp.port}` : undefined;
  }

  /** See ApiServer. */
  served(): string[] {
    return this.api.served();
  }

  /** See ApiServer. */
  get requests$(): Observable<RequestRecord> {
    return this.api.requests$;
  }

  private async start(): Promise<void> {
    const path = this.cfg.socketPath;
    if (await prepareSocket(path)) this.log.info({ socketPath: path }, 'removed a stale API socket left by an agent that is gone');
    const unix = this.newServer();
    await listen(unix, { path });
    restrictSocket(path);
    this.log.info({ socketPath: path, operations: this.api.served().length }, 'API server listening on unix socket');
    if (this.tcpListener) {
      const { at, auth, app } = this.tcpListener;
      const tls = auth.tls && { cert: auth.tls.cert, key: auth.tls.key, ...(auth.tls.ca ? { ca: [...auth.tls.ca], requestCert: true, rejectUnauthorized: true } : {}) };
      const tcp = this.newServer(app, tls);
      await listen(tcp, { host: at.host, port: at.port });
      this.tcp = tcp.address() as AddressInfo;
      const how = [auth.tls ? (auth.tls.ca ? 'TLS, client certificates' : 'TLS') : 'plain HTTP', ...(auth.token ? ['bearer token'] : [])].join(', ');
      this.log.info({ address: this.tcpAddress(), auth: how }, 'API server listening on TCP');
    }
  }

  private newServer(app = this.app, tls?: Parameters<typeof createApiHttpServer>[1]): Server {
    const s = createApiHttpServer(app, tls);
    s.on('clientError', answerClientError);
    this.servers.push(s);
    return s;
  }

  private async stop(): Promise<void> {
    this.api.abortAll(new ShuttingDownError());
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (!s.listening) return resolve();
            s.close(() => resolve());
            s.closeIdleConnections();
            setTimeout(() => s.closeAllConnections(), 1000).unref();
          }),
      ),
    );
    this.servers.length = 0;
    this.tcp = undefined;
    removeSocket(this.cfg.socketPath);
  }
}

/**
 * Answers a request node's HTTP parser refused (bad request line, headers too large) with a JSON
 * Error body like every other answer, then closes the connection.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const code = err.code ?? '';
  const [status, text] = code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'Request Timeout'] : [400, 'Bad Request'];
  const body = JSON.stringify(`malformed HTTP request: ${err.message}`);
  socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** Starts `server` listening on a unix socket path or a TCP host/port; rejects on a listen error. */
export function listen(server: Server, where: { path: string } | { host?: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(where, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
