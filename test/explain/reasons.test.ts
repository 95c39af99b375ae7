// cellium explain, drops that are not policy (unit): the service without backends (its frontend
// and backends named), a forged source address (whose address it is, which endpoint sent it),
// conntrack, and a reason number Cellium knows only by name. None gets a policy proposal.
import t from 'tap';
import type { FrontendStatus, Service } from '../../src/cells/loadbalancer/index.js';
import { dropReasonInfo } from '../../src/cells/explain/index.js';
import { dropLine, fakeServices, world } from './helpers.js';

const svc: Service = { key: 'shop/cart', name: 'cart', namespace: 'shop' } as Service;
const frontend = (port: number, backends: FrontendStatus['frontend']['backends'] = []): FrontendStatus => ({
  frontend: { id: 7, address: { ip: '10.96.0.10', port, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP', serviceKey: 'shop/cart', backends },
  state: 'done',
} as unknown as FrontendStatus);

function toService(line: Record<string, unknown>, port: number): Record<string, unknown> {
  const f = line.flow as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  return { flow: { ...f, drop_reason: 158, drop_reason_desc: 'SERVICE_BACKEND_NOT_FOUND', IP: { ...f.IP, destination: '10.96.0.10' }, l4: { TCP: { destination_port: port } }, destination: { identity: 2, labels: ['reserved:world'] }, destination_service: { name: 'cart', namespace: 'shop' }, traffic_direction: 'EGRESS' } };
}

t.test('a service without backends: the frontend, its backends, and no policy', async (t) => {
  const w = await world(t, { services: fakeServices([frontend(80)], [svc]) });
  const e = w.explainer.explain({ flow: toService(dropLine(w), 80) });
  t.match(e.reason, { code: 158, name: 'SERVICE_BACKEND_NOT_FOUND', kind: 'service', fix: /ready backends/ });
  t.match(e.decision, /load balancer dropped it: service shop\/cart has no active backend for 10\.96\.0\.10:80\/TCP/);
  t.match(e.details, [/service shop\/cart: frontend 10\.96\.0\.10:80\/TCP \(ClusterIP, id 7\) has 0 backends, 0 active/]);
  t.equal(e.flow.service, 'shop/cart');
  t.notOk(e.proposal);
  t.notOk(e.policy, 'no policy trace for a non-policy drop');
  t.match(e.noProposal, /a policy cannot allow this flow: it was not dropped by policy but for SERVICE_BACKEND_NOT_FOUND \(158\)/);
});

t.test('a service address without that port, and a service gone since', async (t) => {
  const w = await world(t, { services: fakeServices([frontend(443)], [svc]) });
  t.match(w.explainer.explain({ flow: toService(dropLine(w), 80) }).details, [/10\.96\.0\.10 is a frontend of shop\/cart on 443\/TCP, not on 80\/TCP/]);
  const gone = await world(t);
  t.match(gone.explainer.explain({ flow: toService(dropLine(gone), 80) }).details, [/no service frontend has the address 10\.96\.0\.10 now \(the flow named service shop\/cart: deleted or changed since\)/]);
});

t.test('a forged source address: whose address it is and which endpoint sent it', async (t) => {
  const w = await world(t);
  const line = dropLine(w) as { flow: Record<string, unknown> };
  const e = w.explainer.explain({ flow: { ...line.flow, drop_reason: 132, drop_reason_desc: 'INVALID_SOURCE_IP', interface: { index: 113 }, traffic_direction: 'EGRESS' } });
  t.match(e.reason, { code: 132, name: 'INVALID_SOURCE_IP', kind: 'source' });
  t.match(e.details, [/10\.0\.0\.11 is the address of endpoint 11 \(shop\/client-0\)/, /came from the interface of endpoint 13 \(shop\/other-0\), whose addresses are 10\.0\.0\.13/]);
  t.match(e.decision, /source check dropped it: endpoint 13 \(shop\/other-0\) sent a packet from 10\.0\.0\.11 that is not its own \(it belongs to endpoint 11\)/);
  t.notOk(e.proposal);
});

t.test('other reasons: conntrack with its fix, and a number known only by name', async (t) => {
  const w = await world(t);
  const line = dropLine(w) as { flow: Record<string, unknown> };
  const ct = w.explainer.explain({ flow: { ...line.flow, drop_reason_desc: 'CT_MAP_INSERTION_FAILED' } });
  t.match(ct, { reason: { code: 155, kind: 'conntrack', fix: /--bpf-ct-global-tcp-max/ }, decision: /CT_MAP_INSERTION_FAILED \(155\)/ });
  t.match(dropReasonInfo(176), { name: 'FORBIDDEN_ICMPV6_MESSAGE', kind: 'other', meaning: /knows no more about it than its name/ });
  t.match(dropReasonInfo(250), { name: 'reason-250' });
});
