/**
 * The router of the CNI server: `POST /v1/cellium/cni` (operation PostCelliumCni). The body is
 * validated against the spec by the API; the answer is 200 with the CNI result (or error) as the
 * body, the JSON text the server made sent as it is, and the shim's exit code in
 * X-Cellium-Cni-Exit-Code; 503 while not ready.
 */
import type { Router } from 'express';
import { CNI_EXIT_CODE_HEADER, type CniRequest } from '../../cni/protocol.js';
import { HttpError } from '../api-server/types.js';
import { sendJsonText } from '../api-server/index.js';
import type { ApiOperations } from '../api-server/types.js';
import type { CniServer } from './server.js';

/** The operationId of the CNI route in api/openapi.yaml. */
export const CNI_OPERATION_ID = 'PostCelliumCni';

/** The CNI router. */
export function cniRouter(ops: ApiOperations, server: CniServer): Router {
  const r = ops.router();
  ops.serve(r, CNI_OPERATION_ID, async (_req, res) => {
    if (!server.ready) throw new HttpError(503, 'the cellium agent is starting: its CNI server is not ready yet', { 'retry-after': '1' });
    const { body, signal } = res.locals.api;
    const resp = await server.handle(body as CniRequest, signal);
    // The body the shim prints is a CNI result (JSON text, written as it is) or nothing.
    const headers = { [CNI_EXIT_CODE_HEADER]: String(resp.exitCode) };
    if (resp.body === '') res.set(headers).end();
    else sendJsonText(res, 200, resp.body, headers);
  });
  return r;
}
