/**
 * Service API handlers (module `api-service`): GET /service, GET|PUT|DELETE /service/{id} (Cilium
 * v1.15's operations, ServiceSpec model) and our POST /cellium/service/import (Kubernetes Service
 * and EndpointSlice manifests). Changes are answered once durable in the state directory. An
 * invalid frontend is a 460, an invalid backend a 461 (Cilium's codes), other bad fields a 400
 * naming the field.
 */
import type { ErrorRequestHandler, Router } from 'express';
import type { ServiceSpec } from '../../api/models.js';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { ApiOperationsToken, ApiRoutersToken, HttpError, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
import { LBError, ServiceManagerToken, applyManifests, formatL3n4, frontendToModel, parseManifests, specToUpsert, type ServiceManager } from '../loadbalancer/index.js';
import { badField, notFound } from '../api-server/index.js';

/** An LBError as an HTTP answer: 460/461 (Cilium's codes), 400 naming the field, 404, 500. */
export function lbHttpError(err: LBError, where: 'body' | 'manifest'): HttpError {
  const field = where === 'body' && err.field.startsWith('/') ? `/body${err.field}` : err.field;
  const message = `${field ? `${field}: ` : ''}${err.problem}; fix: ${err.fix}`;
  switch (err.code) {
    case 'invalid-frontend':
      return new HttpError(460, message);
    case 'invalid-backend':
      return new HttpError(461, message);
    case 'invalid':
      return badField(where === 'body' ? field : '/body', where === 'body' ? `${err.problem}; fix: ${err.fix}` : message);
    case 'not-found':
      return notFound(message);
    default:
      return new HttpError(500, message);
  }
}

/** The manager's frontend-level pointers (`/frontends/0/address`) as ServiceSpec pointers. */
function specPointer(err: LBError): LBError {
  const field = err.field
    .replace(/^\/frontends\/0\/address/, '/frontend-address')
    .replace(/^\/frontends\/0\/type/, '/flags/type')
    .replace(/^\/backends\/(\d+)\/address/, '/backend-addresses/$1')
    .replace(/^\/backends\/(\d+)/, '/backend-addresses/$1');
  return new LBError(err.code, field, err.problem, err.fix);
}

/** The service router. */
export function serviceRouter(ops: ApiOperations, mgr: ServiceManager): Router {
  const r = ops.router();
  const model = (id: number) => {
    const s = mgr.get(id);
    if (!s) throw notFound(`service ${id} does not exist: GET /v1/service lists them`);
    return frontendToModel(s, mgr.service(s.frontend.serviceKey));
  };
  ops.serve(r, 'GetService', (_req, res) => {
    res.json(mgr.list().map((s) => frontendToModel(s, mgr.service(s.frontend.serviceKey))));
  });
  ops.serve(r, 'GetServiceID', (_req, res) => {
    res.json(model(Number(res.locals.api.path.id)));
  });
  ops.serve(r, 'PutServiceID', async (_req, res) => {
    const id = Number(res.locals.api.path.id);
    const spec = res.locals.api.body as ServiceSpec;
    let created: boolean;
    try {
      created = mgr.upsertById(id, specToUpsert(id, spec));
    } catch (err) {
      throw err instanceof LBError ? specPointer(err) : err;
    }
    await mgr.flushStore();
    res.status(created ? 201 : 200).end();
  });
  ops.serve(r, 'DeleteServiceID', async (_req, res) => {
    const id = Number(res.locals.api.path.id);
    if (!mgr.deleteById(id)) throw notFound(`service ${id} does not exist: GET /v1/service lists them`);
    await mgr.flushStore();
    res.status(200).end();
  });
  ops.serve(r, 'PostCelliumServiceImport', async (_req, res) => {
    try {
      const result = applyManifests(mgr, parseManifests(String(res.locals.api.body)));
      await mgr.flushStore();
      res.json({
        services: result.services.map((s) => ({ service: s.service, frontends: s.frontends.map((f) => ({ id: f.id, address: formatL3n4(f.address), type: f.type })), backends: s.backends })),
        pending: [...result.pending],
      });
    } catch (err) {
      if (err instanceof LBError) throw lbHttpError(err, 'manifest');
      throw err;
    }
  });
  const lbErrors: ErrorRequestHandler = (err: unknown, _req, _res, next) => {
    next(err instanceof LBError ? lbHttpError(err, 'body') : err);
  };
  r.use(lbErrors);
  return r;
}

/** What the service router works with. */
const serviceRouterDeps = { ops: ApiOperationsToken, mgr: ServiceManagerToken } as const;

/** The service router, contributed to the API. */
function newServiceRouter(d: DepsValues<typeof serviceRouterDeps>): ApiRouterGroup {
  return { name: 'service', router: serviceRouter(d.ops, d.mgr) };
}

/** The service API handler cell. */
export const serviceHandlersCell = module(
  'api-service',
  'Service API handlers',
  provideInto(ApiRoutersToken, newServiceRouter, serviceRouterDeps),
);
