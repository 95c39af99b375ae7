// A request through the agent's API whose answer is checked against the OpenAPI spec, for the
// tests that drive the API server in-process (test/api-server, test/loadbalancer).
import type { Test } from 'tap';
import type { Transport, RequestOptions } from '../../src/api/transport.js';
import type { SpecValidator } from '../../src/api/spec.js';

/** An answer of the API. */
export interface SpecRes {
  status: number;
  body: unknown;
  headers: Record<string, unknown>;
}

/** Returns `call(operationId, method, path, opts)`: sends the request and checks the answer against the spec (status declared, body and headers valid). */
export function specCaller(
  t: Test,
  tr: Transport,
  validator: SpecValidator,
): (operationId: string, method: string, path: string, opts?: RequestOptions) => Promise<SpecRes> {
  return async (operationId, method, path, opts = {}) => {
    const res = await tr.request(method, path, opts);
    t.same(validator.response(operationId, res.status, res.body, res.headers as Record<string, string>), [], `${method} ${path} -> ${res.status} matches the spec`);
    return res as SpecRes;
  };
}
