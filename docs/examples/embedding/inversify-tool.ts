/**
 * Embedding example (docs/embedding.md): a tool that already runs an inversify container of its own
 * uses Cellium's identity and policy cells from it, two ways:
 *   - loadCells(container, cells): the cells are bound into the tool's container; the tool's own
 *     bindings satisfy what they need (here the state directory), and the tool's own `@injectable()`
 *     classes get the cells' services with `@inject(Token)`;
 *   - hive.toContainerModule(): a hive of its own exposes its public providers to the container
 *     that loads the module.
 * test/embedding runs both against the built package.
 */
import 'reflect-metadata';
import { Container, inject, injectable } from 'inversify';
import { Hive, loadCells, silentLogger } from 'cellium/hive';
import { identityCell, IdentityAllocatorToken, type IdentityAllocator } from 'cellium/cells/identity';
import { policyCell, PolicyRepositoryToken, type PolicyRepository } from 'cellium/cells/policy';
import { statedirCell, StateDirConfigToken, type StateDirConfig } from 'cellium/cells/statedir';

/** A label the way the identity cell takes it. */
type Label = { readonly source: string; readonly key: string; readonly value: string };
const k8s = (key: string, value: string): Label => ({ source: 'k8s', key, value });

/** The tool's own service, written in the usual inversify style, using two Cellium cells. */
@injectable()
export class AccessChecker {
  constructor(
    @inject(IdentityAllocatorToken) private readonly identities: IdentityAllocator,
    @inject(PolicyRepositoryToken) private readonly policy: PolicyRepository,
  ) {}

  /** Allows `from` to reach `to` on TCP `port` (a CiliumNetworkPolicy rule), then traces both ports. */
  async check(from: string, to: string, port: number): Promise<{ identities: number[]; allowed: string; other: string }> {
    const src = await this.identities.allocate([k8s('app', from)]);
    const dst = await this.identities.allocate([k8s('app', to)]);
    this.policy.import(JSON.stringify([{
      endpointSelector: { matchLabels: { app: to } },
      ingress: [{ fromEndpoints: [{ matchLabels: { app: from } }], toPorts: [{ ports: [{ port: String(port), protocol: 'TCP' }] }] }],
      labels: ['k8s:name=tool-rule'],
    }]));
    const trace = (p: number): string => this.policy.trace({ identity: src.identity.id }, { identity: dst.identity.id }, p, 'TCP').verdict;
    return { identities: [src.identity.id, dst.identity.id], allowed: trace(port), other: trace(port + 1) };
  }
}

/** loadCells: the identity and policy cells live in the tool's container, next to the tool's classes. */
export async function checkWithLoadedCells(stateDir: string): Promise<Awaited<ReturnType<AccessChecker['check']>>> {
  const container = new Container();
  container.bind<StateDirConfig>(StateDirConfigToken.id).toConstantValue({ stateDir }); // the tool provides what the cells need
  container.bind(AccessChecker).toSelf().inSingletonScope();
  const hive = loadCells(container, [identityCell, policyCell], { logger: silentLogger() });
  hive.configure({ argv: [] });
  const checker = container.get(AccessChecker); // before start(): the cells' start hooks (identity restore) run at start
  await hive.start();
  try {
    return await checker.check('client', 'web', 80);
  } finally {
    await hive.stop();
  }
}

/** toContainerModule: a hive of its own, its public providers loaded into the tool's container; allocates one identity per app. */
export async function allocateThroughModule(stateDir: string, apps: readonly string[]): Promise<number[]> {
  const hive = new Hive([statedirCell, identityCell], { logger: silentLogger() });
  hive.configure({ argv: [`--state-dir=${stateDir}`] });
  const container = new Container();
  container.load(hive.toContainerModule());
  const identities = container.get<IdentityAllocator>(IdentityAllocatorToken.id);
  await hive.start();
  try {
    const ids: number[] = [];
    for (const app of apps) ids.push((await identities.allocate([k8s('app', app)])).identity.id);
    return ids;
  } finally {
    await hive.stop();
  }
}
