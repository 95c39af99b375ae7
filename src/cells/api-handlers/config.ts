/**
 * Agent configuration API handlers (module `api-config`): GET /config (mutable options, policy
 * enforcement, realized state) and PATCH /config. Provides the DaemonOptions store they change.
 */
import type { Router } from 'express';
import { module, provide, provideInto } from '../../hive/cell.js';
import { LoggerToken } from '../../hive/logger.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations } from '../api-server/types.js';
import { EndpointManagerToken } from '../endpoint/types.js';
import { DaemonOptionsStore, DaemonOptionsToken, type DaemonOptions, type PolicyEnforcement } from './daemon-config.js';
import { domainErrors } from './errors.js';

/** The config router. */
export function configRouter(ops: ApiOperations, opts: DaemonOptions): Router {
  const r = ops.router();
  ops.serve(r, 'GetConfig', (_req, res) => {
    const cur = opts.current();
    const spec = { options: { ...cur.options }, 'policy-enforcement': cur.policyEnforcement };
    res.json({ spec, status: { realized: spec, immutable: {}, datapathMode: 'veth', daemonConfigurationMap: { ...cur.options, PolicyEnforcement: cur.policyEnforcement } } });
  });
  ops.serve(r, 'PatchConfig', async (_req, res) => {
    const body = res.locals.api.body as { options?: Record<string, string>; 'policy-enforcement'?: PolicyEnforcement };
    await opts.update({ options: body.options, policyEnforcement: body['policy-enforcement'] });
    res.end();
  });
  r.use(domainErrors);
  return r;
}

/** The config API handler cell (with the agent's mutable options). */
export const configHandlersCell = module(
  'api-config',
  'Agent configuration API handlers',
  provide(DaemonOptionsToken, DaemonOptionsStore, EndpointManagerToken, LoggerToken),
  provideInto(ApiRoutersToken, (ops: ApiOperations, opts: DaemonOptions) => ({ name: 'config', router: configRouter(ops, opts) }), ApiOperationsToken, DaemonOptionsToken),
);
