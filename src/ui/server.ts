/**
 * The flow page's server: express on a loopback address, serving the static page (static/) and
 * `GET /api/flows?FILTERS` as server-sent events, one `flow` event per flow (FlowView JSON) read
 * from the Hubble Observer API (`GetFlows` with follow) on the agent's Hubble socket, `lost` events
 * for flows the agent could not deliver, and a `failure` event when the stream fails. `GET
 * /api/check?FILTERS` answers what the filters mean or a 400 naming the bad one; `GET /api/status`
 * is the Hubble server's status. Requests whose Host is not a loopback name are refused (a page on
 * another site cannot read the flows through DNS rebinding); the page may run only its own scripts.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Metadata, credentials, type ClientReadableStream } from '@grpc/grpc-js';
import express, { type Request, type Response } from 'express';
import { FlowFilterError, LabelSelectorError, observerpb } from '../hubble/index.js';
import { repoPath } from '../api/repo-files.js';
import { UiFilterError, UiHubbleUnreachableError, UiListenError } from './errors.js';
import { flowsRequest } from './filters.js';
import { isLoopback, type ListenAddress } from './listen.js';
import { flowView } from './view.js';

/** Where the page's HTML, script and style are. */
export const STATIC_DIR = repoPath('src', 'ui', 'static');

/** The security headers of every answer: only the page's own scripts, styles and connections. */
const HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** The Host header's name without its port. */
function hostName(host: string | undefined): string {
  if (!host) return '';
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(host) ?? /^([^:]+)(?::\d+)?$/.exec(host);
  return m?.[1] ?? host;
}

/** Serves the page from start to stop. */
export class FlowPage {
  private http?: Server;
  private readonly client: observerpb.ObserverClient;
  private readonly streams = new Set<ClientReadableStream<observerpb.GetFlowsResponse>>();

  constructor(
    readonly hubbleSocket: string,
    private readonly listen: ListenAddress,
  ) {
    if (!isLoopback(listen.host)) throw new UiListenError(`${listen.host}:${listen.port}`, 'the flow page listens on loopback only');
    this.client = new observerpb.ObserverClient(`unix:${hubbleSocket}`, credentials.createInsecure());
  }

  /** The Hubble server's status; throws UiHubbleUnreachableError. */
  status(timeoutMs = 5000): Promise<observerpb.ServerStatusResponse> {
    return new Promise((resolve, reject) => {
      this.client.serverStatus({}, new Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(new UiHubbleUnreachableError(this.hubbleSocket, err.details || err.message)) : resolve(res)));
    });
  }

  /** Checks the Hubble server answers, then listens; resolves with the page's URL. */
  async start(): Promise<string> {
    await this.status();
    const app = this.app();
    const http = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(this.listen.port, this.listen.host, (err?: Error) => (err ? reject(new UiListenError(`${this.listen.host}:${this.listen.port}`, err.message)) : resolve(s)));
    });
    this.http = http;
    const a = http.address() as AddressInfo;
    // the address the socket got must be loopback too (localhost could resolve otherwise)
    if (!isLoopback(a.address)) {
      await this.stop();
      throw new UiListenError(`${this.listen.host}:${this.listen.port}`, `it resolved to ${a.address}, which is not a loopback address`);
    }
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/`;
  }

  /** Ends every stream and closes the server. */
  async stop(): Promise<void> {
    for (const s of this.streams) s.cancel();
    this.streams.clear();
    const http = this.http;
    this.http = undefined;
    if (http) {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
    this.client.close();
  }

  private app(): express.Express {
    const app = express();
    app.disable('x-powered-by');
    app.use((req, res, next) => {
      res.set(HEADERS);
      if (!isLoopback(hostName(req.headers.host))) {
        res.status(403).type('text/plain').send(`the flow page answers only to loopback names (Host ${JSON.stringify(req.headers.host ?? '')}): open it as http://127.0.0.1:PORT/`);
        return;
      }
      next();
    });
    app.get('/api/check', (req, res) => {
      const r = this.request(req, res);
      if (r) res.json({ request: { number: r.number, follow: r.follow, whitelist: r.whitelist } });
    });
    app.get('/api/status', async (_req, res) => {
      try {
        res.json(await this.status());
      } catch (err) {
        res.status(502).json({ error: (err as Error).message });
      }
    });
    app.get('/api/flows', (req, res) => this.flows(req, res));
    app.use(express.static(STATIC_DIR, { index: 'index.html', dotfiles: 'ignore' }));
    return app;
  }

  /** The GetFlows request of the query, or a 400 naming the bad filter (undefined). */
  private request(req: Request, res: Response): observerpb.GetFlowsRequest | undefined {
    try {
      return flowsRequest(new URL(req.originalUrl, 'http://localhost').searchParams);
    } catch (err) {
      if (!(err instanceof UiFilterError || err instanceof FlowFilterError || err instanceof LabelSelectorError)) throw err;
      res.status(400).json({ error: err.message });
      return undefined;
    }
  }

  /** The flows as server-sent events until the page goes or the stream ends. */
  private flows(req: Request, res: Response): void {
    const request = this.request(req, res);
    if (!request) return;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive' });
    res.flushHeaders();
    res.write(': flows\n\n');
    const call = this.client.getFlows(request);
    this.streams.add(call);
    const send = (event: string, data: unknown): void => {
      // a slow page pauses the gRPC stream: the agent's ring keeps the flows, not this process
      if (!res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) call.pause();
    };
    res.on('drain', () => call.resume());
    call.on('data', (r: observerpb.GetFlowsResponse) => {
      if (r.flow) send('flow', flowView(r.flow));
      else if (r.lostEvents) send('lost', { count: r.lostEvents.numEventsLost, source: r.lostEvents.source });
    });
    call.on('error', (err: Error & { code?: number; details?: string }) => {
      if (err.code !== 1 /* CANCELLED: the page went */) send('failure', { error: `the Hubble server ended the stream: ${err.details || err.message}` });
      res.end();
    });
    call.on('end', () => res.end());
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15000);
    res.on('close', () => {
      clearInterval(keepAlive);
      this.streams.delete(call);
      call.cancel();
    });
  }
}
