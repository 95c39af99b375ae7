/**
 * A consumer of the installed `cellium` package (test/package copies this file into a fresh
 * project): embeds the identity cell in a hive of its own, with the public label parser, and
 * imports the cells whose types reach the generated API types (agent-status, api-handlers), so a
 * strict type check without skipLibCheck proves the published .d.ts are complete.
 */
import { Hive, invoke, silentLogger } from 'cellium/hive';
import { identityCell, IdentityAllocatorToken, parseLabels, formatLabel, type IdentityAllocator } from 'cellium/cells/identity';
import { statedirCell } from 'cellium/cells/statedir';
import { AgentStatusToken, type AgentStatus } from 'cellium/cells/agent-status';
import { healthzHandlersCell } from 'cellium/cells/api-handlers';

/** Allocates the identity of `labels` twice (same number) in a state directory of the tool's own. */
export async function identityOf(stateDir: string, labels: string[]): Promise<{ id: number; again: number; labels: string[] }> {
  let alloc!: IdentityAllocator;
  const hive = new Hive([statedirCell, identityCell, invoke('tool', (a: IdentityAllocator) => { alloc = a; }, IdentityAllocatorToken)], { logger: silentLogger() });
  hive.configure({ argv: [`--state-dir=${stateDir}`] });
  await hive.start();
  try {
    const parsed = parseLabels(labels);
    const first = await alloc.allocate(parsed);
    const second = await alloc.allocate(parseLabels([...labels].reverse()));
    return { id: first.identity.id, again: second.identity.id, labels: parsed.map(formatLabel) };
  } finally {
    await hive.stop();
  }
}

/** Type-level use of the status collector's interface (its .d.ts imports the generated API types). */
export type StatusOf = Awaited<ReturnType<AgentStatus['status']>>;
export const publicTokens = { AgentStatusToken, healthzHandlersCell };

if (process.argv[2]) {
  const r = await identityOf(process.argv[2], process.argv.slice(3));
  process.stdout.write(JSON.stringify(r) + '\n');
}
