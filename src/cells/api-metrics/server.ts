/** Serves GET /metrics (Prometheus text format) over TCP on --prometheus-serve-addr; off when empty. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../../hive/logger.js';
import { listen, parseListenAddress } from '../api-server/index.js';
import type { MetricsServer } from './types.js';

/** The metrics HTTP server. */
export class PrometheusServer implements MetricsServer {
  private server?: Server;

  constructor(
    private readonly registry: Registry,
    private readonly serveAddr: string,
    private readonly log: Logger,
  ) {}

  /** See MetricsServer. */
  address(): string | undefined {
    const a = this.server?.address() as AddressInfo | null | undefined;
    return a ? `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}` : undefined;
  }

  /** See MetricsServer. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** Starts listening when an address is configured. */
  async start(): Promise<void> {
    if (!this.serveAddr) return;
    const { host, port } = parseListenAddress('prometheus-serve-addr', this.serveAddr);
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('only /metrics is served here\n');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('use GET\n');
        return;
      }
      this.scrape().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`collecting metrics failed: ${(err as Error).message}\n`),
      );
    });
    await listen(server, { host: host || undefined, port });
    this.server = server;
    this.log.info({ address: this.address() }, 'serving Prometheus metrics on /metrics');
  }

  /** Stops listening. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }
}
