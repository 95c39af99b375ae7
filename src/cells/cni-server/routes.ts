/**
 * The route of the CNI server: `POST /v1/cellium/cni` (operation PostCelliumCni). The body is
 * validated against the spec by the API server; the answer is 200 with the CNI result (or error)
 * as the body and the shim's exit code in X-Cellium-Cni-Exit-Code, or 503 while not ready.
 */
import { CNI_EXIT_CODE_HEADER, type CniRequest } from '../../cni/protocol.js';
import { HttpError } from '../api-server/errors.js';
import type { ApiResult, ApiRouteGroup } from '../api-server/types.js';
import type { CniServer } from './server.js';

/** The operationId of the CNI route in api/openapi.yaml. */
export const CNI_OPERATION_ID = 'PostCelliumCni';

/** The CNI route group. */
export function cniRoutes(server: CniServer): ApiRouteGroup {
  return {
    name: 'cni',
    routes: [
      {
        operationId: CNI_OPERATION_ID,
        handle: async (req): Promise<ApiResult> => {
          if (!server.ready) throw new HttpError(503, 'the cellium agent is starting: its CNI server is not ready yet', { 'retry-after': '1' });
          const resp = await server.handle(req.body as CniRequest, req.signal);
          // The body the shim prints is a CNI result (JSON text, written as it is) or nothing.
          const headers = { [CNI_EXIT_CODE_HEADER]: String(resp.exitCode) };
          return resp.body === '' ? { status: 200, headers } : { status: 200, json: resp.body, headers };
        },
      },
    ],
  };
}
