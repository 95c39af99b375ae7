/**
 * Agent configuration API handlers (module `api-config`): GET /config (mutable options, policy
 * enforcement, realized state) and PATCH /config. Provides the DaemonOptions store they change.
 */
import type { Router } from 'express';
import { module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { LoggerToken } from '../../hive/logger.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
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

/** What the agent's mutable options work with: a change regenerates every endpoint. */
const daemonOptionsDeps = { endpoints: EndpointManagerToken, log: LoggerToken } as const;

/** Builds the agent's mutable options. */
function newDaemonOptions(d: DepsValues<typeof daemonOptionsDeps>): DaemonOptions {
  return new DaemonOptionsStore(d.endpoints, d.log);
}

/** What the config router works with. */
const configRouterDeps = { ops: ApiOperationsToken, opts: DaemonOptionsToken } as const;

/** The config router, contributed to the API. */
function newConfigRouter(d: DepsValues<typeof configRouterDeps>): ApiRouterGroup {
  return { name: 'config', router: configRouter(d.ops, d.opts) };
}

/** The config API handler cell (with the agent's mutable options). */
export const configHandlersCell = module(
  'api-config',
  'Agent configuration API handlers',
  provide(DaemonOptionsToken, newDaemonOptions, daemonOptionsDeps),
  provideInto(ApiRoutersToken, newConfigRouter, configRouterDeps),
);
