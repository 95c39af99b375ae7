/**
 * The API server: the agent's express application (the API router) on the unix socket (always)
 * and on TCP when --api-listen-address is set. Started and stopped by the hive's lifecycle.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { Observable } from 'rxjs';
import type { Lifecycle } from '../../hive/lifecycle.js';
import type { Logger } from '../../hive/logger.js';
import { createApiApp, createApiHttpServer } from './app.js';
import { parseListenAddress, type ApiServerConfig } from './config.js';
import { ShuttingDownError } from './errors.js';
import { prepareSocket, removeSocket, restrictSocket } from './socket.js';
import type { ApiRouter, ApiServer, RequestRecord } from './types.js';

/** The API server of the agent. */
export class ApiServerImpl implements ApiServer {
  private readonly app: Express;
  private readonly servers: Server[] = [];
  private tcp?: AddressInfo;

  constructor(
    private readonly cfg: ApiServerConfig,
    private readonly api: ApiRouter,
    private readonly log: Logger,
    lc: Lifecycle,
  ) {
    this.app = createApiApp(api.router);
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
    if (this.cfg.apiListenAddress) {
      const { host, port } = parseListenAddress('api-listen-address', this.cfg.apiListenAddress);
      const tcp = this.newServer();
      await listen(tcp, { host: host || undefined, port });
      this.tcp = tcp.address() as AddressInfo;
      this.log.info({ address: this.tcpAddress() }, 'API server listening on TCP');
    }
  }

  private newServer(): Server {
    const s = createApiHttpServer(this.app);
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
