// Privileged, BPF datapath (issue 11, inputs validated): an endpoint may not hold one of the node's
// own addresses. The ipcache gives those the host identity (which ingress policy lets in,
// allow-localhost), and the endpoint's program lets its pod send from its own address: a pod given
// the node's address would be let in everywhere as the host. PUT /endpoint with the node's first
// non-loopback IPv4 address fails with 400 naming the field, and nothing is left of the endpoint.
import t from 'tap';
import { networkInterfaces } from 'node:os';
import { ip } from '../bpf/fixtures/topology.js';
import { Cleanup, bpfRoot, skipReason, startBpfAgent, uniq } from './fixtures.js';

const POOL = '10.139.7.0/24';
const nodeIPv4 = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

t.test("an endpoint with the node's own address is refused", { skip: skipReason() || (nodeIPv4 ? false : 'the node has no non-loopback IPv4 address') }, async (t) => {
  const c = new Cleanup(t);
  const agent = await startBpfAgent(c, bpfRoot(c), POOL);
  const name = `lxch${uniq()}`.slice(0, 15);
  ip('link', 'add', name, 'type', 'veth', 'peer', 'name', `p${name}`.slice(0, 15));
  c.teardown(() => ip('link', 'del', name));
  const link = (JSON.parse(ip('-j', 'link', 'show', name)) as Array<{ ifindex: number; address: string }>)[0]!;
  const req = { 'container-id': `host-${name}`, 'interface-name': name, 'interface-index': link.ifindex, 'host-mac': link.address, addressing: { ipv4: nodeIPv4! }, labels: ['k8s:app=x'], state: 'waiting-for-identity' as const, 'sync-build-endpoint': true };
  await t.rejects(agent.client.createEndpoint(0, req), { message: new RegExp(`endpoint address ${nodeIPv4!.replaceAll('.', '\\.')} is an address of this node.*fix: use an address of the pod network`) }, 'refused');
  t.same(await agent.client.listEndpoints(), [], 'no endpoint is left');
});
