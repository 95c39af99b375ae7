/**
 * Agent configuration API handlers (module `api-config`): GET /config (mutable options, policy
 * enforcement, realized state) and PATCH /config. Provides the DaemonOptions store they change.
 */
import { module, provide, provideInto } from '../../hive/cell.js';
import { LoggerToken } from '../../hive/logger.js';
import { ApiRoutesToken, ok, type ApiRouteGroup } from '../api-server/types.js';
import { EndpointManagerToken } from '../endpoint/types.js';
import { DaemonOptionsStore, DaemonOptionsToken, type DaemonOptions, type PolicyEnforcement } from './daemon-config.js';
import { mapped } from './errors.js';

/** The config route group. */
export function configRoutes(opts: DaemonOptions): ApiRouteGroup {
  return {
    name: 'config',
    routes: [
      {
        operationId: 'GetConfig',
        handle: () => {
          const cur = opts.current();
          const spec = { options: { ...cur.options }, 'policy-enforcement': cur.policyEnforcement };
          return ok({ spec, status: { realized: spec, immutable: {}, datapathMode: 'veth', daemonConfigurationMap: { ...cur.options, PolicyEnforcement: cur.policyEnforcement } } });
        },
      },
      {
        operationId: 'PatchConfig',
        handle: (req) =>
          mapped([400, 500], async () => {
            const body = req.body as { options?: Record<string, string>; 'policy-enforcement'?: PolicyEnforcement };
            await opts.update({ options: body.options, policyEnforcement: body['policy-enforcement'] });
            return ok();
          }),
      },
    ],
  };
}

/** The config API handler cell (with the agent's mutable options). */
export const configHandlersCell = module(
  'api-config',
  'Agent configuration API handlers',
  provide(DaemonOptionsToken, DaemonOptionsStore, EndpointManagerToken, LoggerToken),
  provideInto(ApiRoutesToken, configRoutes, DaemonOptionsToken),
);
