/** The monitor cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { invoke, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiRouterGroup } from '../api-server/types.js';
import { SelectedDatapathToken } from '../datapath/types.js';
import { EndpointManagerToken } from '../endpoint/types.js';
import { IdentityAllocatorToken } from '../identity/types.js';
import { MonitorAgent } from './agent.js';
import { Enricher } from './enrich.js';
import { monitorRouter } from './routes.js';

/** Token for the monitor agent. */
export const MonitorAgentToken = token<MonitorAgent>('MonitorAgent');

/** What the agent works with: the datapath it reads, what it enriches the events from. */
const agentDeps = {
  selected: SelectedDatapathToken,
  endpoints: EndpointManagerToken,
  identities: IdentityAllocatorToken,
  lc: LifecycleToken,
  log: LoggerToken,
} as const;

/** Builds the agent with its stop hook. */
function newAgent(d: DepsValues<typeof agentDeps>): MonitorAgent {
  const agent = new MonitorAgent(d.selected.datapath, new Enricher(d.endpoints, d.identities), d.log);
  d.lc.append({ name: 'monitor', onStop: () => agent.stop() });
  return agent;
}

/** What the monitor's API router works with. */
const routerDeps = { ops: ApiOperationsToken, agent: MonitorAgentToken } as const;

/** The monitor's router, contributed to the API. */
function newMonitorRouter(d: DepsValues<typeof routerDeps>): ApiRouterGroup {
  return { name: 'monitor', router: monitorRouter(d.ops, d.agent) };
}

/** The monitor cell. */
export const monitorCell = module(
  'monitor',
  'Datapath monitor events: drops, traces and policy verdicts streamed to cellium monitor',
  provide(MonitorAgentToken, newAgent, agentDeps),
  provideInto(ApiRoutersToken, newMonitorRouter, routerDeps),
  invoke('monitor', (_a: MonitorAgent) => undefined, MonitorAgentToken),
);
