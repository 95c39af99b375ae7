// Privileged, BPF datapath (issue 6, "Done means" 1): the whole agent (src/cells.ts) in this process
// with --datapath-mode=bpf, three pods plumbed like the CNI plugin does (client `app=client`, server
// `app=server`, an unlabelled one) and created with `PUT /v1/endpoint` over the API socket with
// sync-build-endpoint. Proves on real TCP connections through the attached bpf_lxc programs: pods
// reach each other by default; after `cellium policy import` of a CiliumNetworkPolicy allowing only
// app=client to 80/TCP on app=server, the client connects to 80 but not to 81, the unlabelled pod
// cannot connect to 80, and traffic the policy does not select still flows; an ingressDeny for the
// same traffic overrides the allow; deleting the policies restores connectivity.
import t from 'tap';
import { Cleanup, allocatePod, attachedCount, bpfRoot, cli, connects, endpointRequest, endpointsDiag, policyFile, skipReason, startBpfAgent, tcpFrom, type Pod } from './fixtures.js';

const POOL = '10.241.0.0/24';

t.test('policy imported with the CLI is enforced on real packets by the BPF datapath', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL);
  const pods: Record<'client' | 'server' | 'other', Pod> = {
    client: await allocatePod(c, agent.client, 'client'),
    server: await allocatePod(c, agent.client, 'server'),
    other: await allocatePod(c, agent.client, 'other'),
  };
  const labels = { client: ['k8s:app=client'], server: ['k8s:app=server'], other: [] };
  for (const name of ['client', 'server', 'other'] as const) {
    const ep = await agent.client.createEndpoint(0, endpointRequest(pods[name], labels[name]));
    t.equal(ep.status?.state, 'ready', `${name}: endpoint ${ep.id} is ready when PUT answers (sync-build-endpoint)`);
    t.same(attachedCount(pods[name]), { from_container: 1, to_container: 1 }, `${name}: one program attached at each hook of ${pods[name].hostIf}`);
  }
  const { client, server, other } = pods;

  t.ok(await connects(client, server, 80), 'no policy: client -> server:80');
  t.ok(await connects(client, server, 81), 'no policy: client -> server:81');
  t.ok(await connects(other, server, 80), 'no policy: unlabelled -> server:80');
  t.ok(await connects(server, other, 80), 'no policy: server -> unlabelled:80');

  /** Runs `cellium policy …` with --wait; on a failure the endpoints' states go into the report. */
  const policyCli = async (...args: string[]): Promise<void> => {
    const r = await cli(agent.socketPath, 'policy', ...args, '--wait');
    t.equal(r.code, 0, `cellium policy ${args.join(' ')} --wait: ${r.err.trim()}`, r.code ? { endpoints: await endpointsDiag(agent.client) } : {});
  };

  await policyCli('import', policyFile(agent.dir, 'server-allow-client-80', { ingress: [tcpFrom('client', 80)] }));
  t.ok(await connects(client, server, 80), 'allow policy: client -> server:80 connects');
  t.notOk(await connects(client, server, 81), 'allow policy: client -> server:81 is dropped');
  t.notOk(await connects(other, server, 80), 'allow policy: unlabelled -> server:80 is dropped');
  // "Not selected" is checked between the other two pods (ct-default-deny.test.ts covers replies).
  t.ok(await connects(other, client, 80), 'allow policy: unlabelled -> client:80 is not selected by the policy and connects');
  t.ok(await connects(client, other, 81), 'allow policy: client -> unlabelled:81 is not selected by the policy and connects');

  await policyCli('import', policyFile(agent.dir, 'server-deny-client-80', { ingressDeny: [tcpFrom('client', 80)] }));
  t.notOk(await connects(client, server, 80), 'ingressDeny overrides the allow: client -> server:80 is dropped');
  t.ok(await connects(client, other, 80), 'the deny selects only the server: client -> unlabelled:80 connects');

  await policyCli('delete', '--all');
  t.ok(await connects(client, server, 80), 'policies deleted: client -> server:80 connects again');
  t.ok(await connects(client, server, 81), 'policies deleted: client -> server:81 connects');
  t.ok(await connects(other, server, 80), 'policies deleted: unlabelled -> server:80 connects');
});
