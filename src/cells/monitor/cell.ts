/** The monitor cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { invoke, module, provide, provideInto } from '../../hive/cell.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations } from '../api-server/types.js';
import { SelectedDatapathToken, type SelectedDatapath } from '../datapath/types.js';
import { EndpointManagerToken, type EndpointManager } from '../endpoint/types.js';
import { IdentityAllocatorToken, type IdentityAllocator } from '../identity/types.js';
import { MonitorAgent } from './agent.js';
import { Enricher } from './enrich.js';
import { monitorRouter } from './routes.js';

/** Token for the monitor agent. */
export const MonitorAgentToken = token<MonitorAgent>('MonitorAgent');

function newAgent(selected: SelectedDatapath, endpoints: EndpointManager, identities: IdentityAllocator, lc: Lifecycle, log: Logger): MonitorAgent {
  const agent = new MonitorAgent(selected.datapath, new Enricher(endpoints, identities), log);
  lc.append({ name: 'monitor', onStop: () => agent.stop() });
  return agent;
}

/** The monitor cell. */
export const monitorCell = module(
  'monitor',
  'Datapath monitor events: drops, traces and policy verdicts streamed to cellium monitor',
  provide(MonitorAgentToken, newAgent, SelectedDatapathToken, EndpointManagerToken, IdentityAllocatorToken, LifecycleToken, LoggerToken),
  provideInto(ApiRoutersToken, (ops: ApiOperations, agent: MonitorAgent) => ({ name: 'monitor', router: monitorRouter(ops, agent) }), ApiOperationsToken, MonitorAgentToken),
  invoke('monitor', (_a: MonitorAgent) => undefined, MonitorAgentToken),
);
