// `cellium explain` (unit: the CLI in-process against the CLI tests' fake agent, whose explain
// operation is the real explainer over the real policy cell): hubble observe -o json output from
// a file (the last drop of several), human and JSON output, --apply --yes importing the proposal
// after the diff, and every usage mistake named with its fix (exit 2); Hubble unreachable (exit 1).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ExplainError } from '../../src/cells/explain/index.js';
import { flowFromText } from '../../src/cli/commands/explain.js';
import { flowFilter, hubbleAddress } from '../../src/cli/commands/explain-hubble.js';
import { flowpb } from '../../src/hubble/index.js';
import { cli, startFakeAgent } from '../cli/fake-agent.js';
import { cnp, dropLine, world } from './helpers.js';

async function setup(t: Parameters<typeof world>[0]) {
  const w = await world(t);
  w.repo.import(cnp('web', { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] }));
  const agent = await startFakeAgent(t, {
    // as the explain cell's router answers: 400 naming the field of the body
    PostCelliumPolicyExplain: (req) => {
      try {
        return { status: 200, body: w.explainer.explain(req.body as never) };
      } catch (err) {
        if (!(err instanceof ExplainError)) throw err;
        return { status: 400, body: { error: { message: err.message, field: `/body${err.pointer}` } } };
      }
    },
    GetPolicy: () => ({ status: 200, body: { revision: w.repo.revision, policy: JSON.stringify(w.repo.get()) } }),
    PutPolicy: (req) => {
      w.repo.import(String(req.body));
      return { status: 200, body: { revision: w.repo.revision, policy: JSON.stringify(w.repo.get()) } };
    },
    GetEndpoint: { status: 200, body: [] },
    // no endpoints: every revision is realized at once
    GetCelliumPolicyRealized: () => ({ status: 200, body: { revision: w.repo.revision, target: w.repo.revision, endpoints: 0, realized: 0, 'min-realized-revision': 0, pending: [] } }),
  });
  const dir = mkdtempSync(join(tmpdir(), 'cellium-explain-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  return { w, agent, file, run: (...args: string[]) => cli(agent.socketPath, ['explain', ...args]) };
}

t.test('hubble observe -o json output from a file: the last drop, human and JSON', async (t) => {
  const { w, file, run } = await setup(t);
  const forwarded = { flow: { ...(dropLine(w).flow as object), verdict: 'FORWARDED', uuid: 'fwd' } };
  const first = { flow: { ...(dropLine(w, { port: 82 }).flow as object), uuid: 'drop-82' } };
  const last = { flow: { ...(dropLine(w, { port: 81 }).flow as object), uuid: 'drop-81' } };
  const f = file('flows.json', [forwarded, first, last].map((o) => JSON.stringify(o)).join('\n') + '\n');
  const human = await run(f);
  t.equal(human.code, 0, human.stderr);
  t.match(human.stderr, /2 dropped flows given; explaining the last \(drop-81\)/);
  t.match(human.stdout, /^Flow:\s+shop\/client-0 \(10\.0\.0\.11\) -> shop\/web-0 \(10\.0\.0\.12:81\) TCP, ingress$/m);
  t.match(human.stdout, /^Drop reason:\s+POLICY_DENIED \(133\): no policy rule allowed the flow/m);
  t.match(human.stdout, /^Egress at the source \(shop\/client-0 \(10\.0\.0\.11\)\): ALLOWED \(not enforced\)$/m);
  t.match(human.stdout, /^Ingress at the destination \(shop\/web-0 \(10\.0\.0\.12\)\): DENIED$/m);
  t.match(human.stdout, /^ {4}\/spec\/ingress\/0 allows from \[any:app=client&k8s:io\.kubernetes\.pod\.namespace=shop\] on 80\/TCP: the peer matches, but 81\/TCP is not among 80\/TCP$/m);
  t.match(human.stdout, /Proposed CiliumNetworkPolicy \(checked: the policy trace with it added allows the flow\):\n---\napiVersion: cilium\.io\/v2\nkind: CiliumNetworkPolicy\nmetadata:\n {2}name: explain-allow-client-0-to-web-0-81-tcp/);
  const json = await run('-o', 'json', f);
  t.equal(json.code, 0);
  t.match(JSON.parse(json.stdout), { flow: { uuid: 'drop-81', port: 81 }, proposal: { check: { verdict: 'allowed' } } });
  t.same(flowFromText(JSON.stringify(last.flow), 'x').flow, last.flow, 'one pretty or bare JSON document reads too');
});

t.test('--apply --yes: the diff on stderr, the import, the flow allowed afterwards', async (t) => {
  const { w, agent, file, run } = await setup(t);
  const f = file('drop.json', JSON.stringify(dropLine(w, { port: 81 })));
  const r = await run(f, '--apply', '--yes');
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /^--- policy repository \(revision 2, 1 rule\)\n\+\+\+ with the proposed policy\n\+apiVersion: cilium\.io\/v2\n/m);
  t.match(r.stderr, /Imported: policy revision 3, enforced by every endpoint/);
  t.equal(agent.requests('PutPolicy').length, 1, 'one import');
  t.equal(w.repo.trace({ identity: w.client.id }, { identity: w.web.id }, 81, 'TCP').verdict, 'allowed', 'the flow is allowed now');
  t.equal(w.repo.trace({ identity: w.other.id }, { identity: w.web.id }, 81, 'TCP').verdict, 'denied', 'the unrelated flow is not');
  const again = await run(f, '--apply', '--yes');
  t.equal(again.code, 1, 'nothing left to apply');
  t.match(again.stderr, /^cellium: nothing to apply: the repository allows 81\/TCP .* now \(revision 3\)/m);
  const json = await run('-o', 'json', file('drop2.json', JSON.stringify(dropLine(w, { port: 82 }))), '--apply', '--yes');
  t.equal(json.code, 0, json.stderr);
  t.match(JSON.parse(json.stdout), { explanation: { flow: { port: 82 } }, applied: { revision: 4 } }, '-o json: the explanation and the revision');
});

t.test('usage mistakes name the flag and the fix (exit 2); no agent request is made', async (t) => {
  const { w, agent, file, run } = await setup(t);
  const f = file('drop.json', JSON.stringify(dropLine(w)));
  const cases: [string[], RegExp][] = [
    [[], /give the dropped flow one way: a file of hubble observe -o json output \(- for stdin\), --flow-id UUID, or --from\/--to/],
    [[f, '--flow-id', 'x'], /give the dropped flow one way/],
    [['--to', 'a', '--to-service', 'b/c'], /give --to or --to-service, not both/],
    [[f, '--format', 'yaml'], /--format "yaml" is not a format: give cilium \(CiliumNetworkPolicy\) or k8s \(NetworkPolicy\)/],
    [[f, '--format', 'k8s', '--apply'], /a NetworkPolicy is applied through Kubernetes \(kubectl apply -f FILE\)/],
    [[f, '--yes'], /--yes answers the question of --apply: give --apply too/],
    [[file('none.json', '{"node_name":"x"}\n')], /holds no flow: give hubble observe -o json output/],
    [[file('broken.json', '{"flow":{"verdict":"DROPPED"}}\nnot json\n')], /broken\.json line 2 is not JSON .*one flow a line/],
    [[file('fwd.json', [dropLine(w), dropLine(w)].map((d) => JSON.stringify({ flow: { ...(d.flow as object), verdict: 'FORWARDED' } })).join('\n'))], /holds 2 flows and none is DROPPED/],
    [['--from', 'Bad_Pod!', '--hubble-server', 'unix:///nonexistent'], /--from "Bad_Pod!" is neither a pod \(NAMESPACE\/NAME, or NAME in default\) nor an IP address/],
    [['--to-service', 'nons', '--hubble-server', 'unix:///nonexistent'], /--to-service "nons" is not NAMESPACE\/NAME/],
    [['--from', 'a', '--hubble-server', 'tcp://h:4245'], /--hubble-server "tcp:\/\/h:4245" is not a unix socket/],
  ];
  for (const [args, msg] of cases) {
    const r = await run(...args);
    t.equal(r.code, 2, args.join(' ') || '(no arguments)');
    t.match(r.stderr, msg, args.join(' ') || '(no arguments)');
  }
  const notTty = await run(f, '--apply');
  t.equal(notTty.code, 2, '--apply without --yes and no terminal');
  t.match(notTty.stderr, /stdin is not a terminal \(or holds the flow\): add --yes/);
  t.equal(agent.requests('PutPolicy').length, 0, 'nothing was imported');
  const forwarded = await run(file('one-fwd.json', JSON.stringify({ flow: { ...(dropLine(w).flow as object), verdict: 'FORWARDED' } })));
  t.equal(forwarded.code, 1, 'a single forwarded flow: the agent names its verdict');
  t.match(forwarded.stderr, /verdict is FORWARDED, not DROPPED.* \[HTTP 400\]/);
});

t.test('Hubble: the filter of --from/--to/--to-service/--flow-id, and an unreachable socket', async (t) => {
  const { run } = await setup(t);
  const { filter, exact } = flowFilter({ from: 'shop/client-0', to: '10.0.0.12', flowId: 'u-1' });
  t.match(filter, { verdict: [flowpb.Verdict.DROPPED], sourcePod: ['shop/client-0'], destinationIp: ['10.0.0.12'], uuid: ['u-1'] });
  const ep = (namespace: string, podName: string) => ({ ID: 0, identity: 0, clusterName: '', namespace, labels: [], podName, workloads: [] });
  t.ok(exact({ source: ep('shop', 'client-0') } as unknown as flowpb.Flow), 'the pod itself');
  t.notOk(exact({ source: ep('shop', 'client-01') } as unknown as flowpb.Flow), 'a pod whose name only starts the same (Hubble matches prefixes)');
  t.match(flowFilter({ from: 'web' }).filter, { sourcePod: ['default/web'] }, 'a bare name is in default');
  t.equal(hubbleAddress(undefined, '/run/x/cellium.sock'), 'unix:/run/x/hubble.sock', 'beside the API socket by default');
  const r = await run('--from', 'shop/client-0', '--hubble-server', 'unix:///nonexistent/hubble.sock', '--timeout', '5s');
  t.equal(r.code, 1);
  t.match(r.stderr, /cannot reach Hubble at unix:\/\/\/nonexistent\/hubble\.sock .*start the agent with --enable-hubble/);
});
