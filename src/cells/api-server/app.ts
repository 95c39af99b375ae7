/**
 * The agent's express application around the API router, and the node:http server it runs in. The
 * server makes its requests and responses with express's prototypes from the start, so express's
 * per-request prototype swap finds them already in place (V8 keeps their shape) instead of
 * changing every request object's prototype.
 */
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { Socket } from 'node:net';
import express, { type Express, type Router } from 'express';

/** An express application serving `router`, with the settings an API wants (no ETag, no X-Powered-By, no query parsing it does not use). */
export function createApiApp(router: Router): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', false);
  app.use(router);
  return app;
}

type RequestClass = typeof IncomingMessage;
type ResponseClass = typeof ServerResponse<IncomingMessage>;

/** node:http's request and response classes, their instances made with `app`'s request and response prototypes. */
export function expressMessageClasses(app: Express): { IncomingMessage: RequestClass; ServerResponse: ResponseClass } {
  function Request(this: IncomingMessage, socket: Socket): void {
    (IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void).call(this, socket);
  }
  Request.prototype = app.request;
  function Response(this: ServerResponse, req: IncomingMessage, options?: unknown): void {
    (ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void).call(this, req, options);
  }
  Response.prototype = app.response;
  return { IncomingMessage: Request as unknown as RequestClass, ServerResponse: Response as unknown as ResponseClass };
}

/** A node:http server running `app` (keep-alive connections idle up to 30 s). */
export function createApiHttpServer(app: Express): Server {
  return createServer({ keepAliveTimeout: 30_000, ...expressMessageClasses(app) }, app);
}
