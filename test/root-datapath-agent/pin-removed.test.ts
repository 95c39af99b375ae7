// Privileged, BPF datapath (issue 11, fail closed): the whole agent in this process with
// --datapath-mode=bpf and two pods. An endpoint's pinned policy map is removed by hand while the
// agent runs (`rm /sys/fs/bpf/cellium/cellium_policy_NNNNN`): the program keeps the map it was
// loaded with, while the agent's next write creates a new pinned one. A deny imported after that
// must still be enforced. Per-endpoint programs: the agent finds the program bound to a map that is
// no longer the pinned one (the periodic check, and CNI CHECK) and reloads it on the new map. The
// shared program (the default): the pin is only the endpoint's name of its shared policy map, which
// its slot in cellium_policy_maps keeps pointing at; the deny is written there, and the prune pins
// the name again.
import t from 'tap';
import { rmSync } from 'node:fs';
import { BpfMap } from '../../src/bpf/index.js';
import { PolicyMapsMap, policyMapPath } from '../../src/maps/index.js';
import { Cleanup, allocatePod, bpfRoot, cli, connects, endpointRequest, endpointsDiag, policyFile, skipReason, startBpfAgent, tcpFrom, until } from './fixtures.js';

const POOL = '10.139.3.0/24';

t.test('a policy map unpinned by hand: a later deny is enforced once the program is reloaded on the new map', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL, { 'bpf-map-prune-interval': '1s' });
  const client = await allocatePod(c, agent.client, 'client');
  const server = await allocatePod(c, agent.client, 'server');
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  const ep = await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  t.ok(await connects(client, server, 80), 'no policy: the client connects');

  rmSync(policyMapPath(root, ep.id));
  const r = await cli(agent.socketPath, 'policy', 'import', '--wait', policyFile(agent.dir, 'deny', { ingressDeny: [tcpFrom('client', 80)] }));
  t.equal(r.code, 0, `policy import: ${r.err.trim()}`, r.code ? { endpoints: await endpointsDiag(agent.client) } : {});
  t.ok(await until(async () => !(await connects(client, server, 80)), 10000, 200), 'the deny is enforced');
  if (process.env.CELLIUM_BPF_LXC_PROGRAM === 'per-endpoint') {
    const log = (await agent.client.getEndpointLog(ep.id)).map((l) => l.message ?? '');
    t.ok(log.some((m) => /does not look up the pinned policy map/.test(m)), 'the endpoint log says why its program was reloaded', { log });
  } else {
    const slotMap = (): number | undefined => {
      const slots = PolicyMapsMap.open(root);
      try {
        return slots.get(ep.id);
      } finally {
        slots.close();
      }
    };
    const pinned = (): number | undefined => {
      try {
        const m = BpfMap.openPinned(policyMapPath(root, ep.id));
        const id = m.info.id;
        m.close();
        return id;
      } catch {
        return undefined;
      }
    };
    t.ok(await until(() => pinned() !== undefined && pinned() === slotMap(), 10000, 200), 'the prune pins the endpoint\'s name of its shared map again');
  }
  t.ok(await until(async () => (await agent.client.getEndpoint(ep.id)).status.health?.bpf === 'OK', 10000), 'and its BPF health is OK again');
  t.notOk(await connects(client, server, 80), 'still denied');
});
