/**
 * The agent's express application around the API router, and the node:http server it runs in. The
 * server makes its requests and responses with express's prototypes from the start, so express's
 * per-request prototype swap finds them already in place instead of changing the prototype of
 * every request and response (which costs V8 their fast shape: measured 2x the CPU per request).
 */
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import { createServer as createTlsServer, type ServerOptions as TlsServerOptions } from 'node:https';
import express, { type Express, type RequestHandler, type Router } from 'express';

/**
 * An express application serving `router`, with the settings an API wants (no ETag, no
 * X-Powered-By, no query parsing it does not use); `before` run ahead of it (authentication).
 */
export function createApiApp(router: Router, ...before: RequestHandler[]): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', false);
  if (before.length) app.use(...before);
  app.use(router);
  return app;
}

/**
 * node:http's request and response classes for `app`: subclasses whose prototypes sit in front of
 * express's, and become `app.request` / `app.response`, so a request is made with the prototype
 * express gives it (classes keep V8's in-object property layout of node's own messages).
 */
export function expressMessageClasses(app: Express): { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse } {
  class ApiIncomingMessage extends IncomingMessage {}
  class ApiServerResponse<R extends IncomingMessage = IncomingMessage> extends ServerResponse<R> {}
  Object.setPrototypeOf(ApiIncomingMessage.prototype, app.request);
  Object.setPrototypeOf(ApiServerResponse.prototype, app.response);
  app.request = ApiIncomingMessage.prototype as unknown as Express['request'];
  app.response = ApiServerResponse.prototype as unknown as Express['response'];
  return { IncomingMessage: ApiIncomingMessage, ServerResponse: ApiServerResponse };
}

/**
 * A node:http server running `app` (keep-alive connections idle up to 30 s); a node:https one
 * with `tls` (TLS 1.2 at least).
 */
export function createApiHttpServer(app: Express, tls?: TlsServerOptions): Server {
  const opts = { keepAliveTimeout: 30_000, ...expressMessageClasses(app) };
  return tls ? createTlsServer({ minVersion: 'TLSv1.2', ...tls, ...opts }, app) : createServer(opts, app);
}
