/**
 * `POST /v1/cellium/policy/explain` (operation PostCelliumPolicyExplain): a dropped Hubble flow in,
 * the explanation out. Bad input answers 400 naming the field of the body (`/body/flow/l4`), a
 * side the agent does not know 404.
 */
import type { NextFunction, Request, Response, Router } from 'express';
import { badField, notFound } from '../api-server/index.js';
import type { ApiOperations } from '../api-server/types.js';
import { PolicyError } from '../policy/types.js';
import { ExplainError } from './errors.js';
import type { ExplainRequest, FlowExplainer } from './types.js';

/** The operationId of explain in api/openapi.yaml. */
export const EXPLAIN_OPERATION_ID = 'PostCelliumPolicyExplain';

/** The explain router. */
export function explainRouter(ops: ApiOperations, explainer: FlowExplainer): Router {
  const r = ops.router();
  ops.serve(r, EXPLAIN_OPERATION_ID, (_req, res) => {
    res.json(explainer.explain(res.locals.api.body as ExplainRequest));
  });
  r.use((err: unknown, _req: Request, _res: Response, next: NextFunction) => {
    if (err instanceof ExplainError) next(err.code === 'not-found' ? notFound(err.message) : badField(`/body${err.pointer}`, err.message, err.fix));
    else if (err instanceof PolicyError) next(badField(`/body/flow`, err.message, err.fix));
    else next(err);
  });
  return r;
}
