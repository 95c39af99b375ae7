// Delegated IPAM over a FakeNet with Debian's real host-local plugin (no root needed: host-local
// only writes its data directory): ADD takes the plugin's address, gateway and routes and leaves
// the node pool alone; a failure after the IPAM ADD releases the address (IPAM DEL); DEL is
// idempotent; bad ipam sections are clear code-7 errors naming the field; cluster-pool warns once
// per network about an ignored ipam section.
import t from 'tap';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { CniServer } from '../../src/cells/cni-server/index.js';
import { body, cniReq, rig, tempDir } from './helpers.js';

const HOST_LOCAL = '/usr/lib/cni/host-local';
const skip = existsSync(HOST_LOCAL) ? false : `needs ${HOST_LOCAL} (containernetworking-plugins)`;

async function delegatedRig(t: Parameters<typeof rig>[0], mode: 'cluster-pool' | 'delegated-plugin' = 'delegated-plugin') {
  const r = await rig(t);
  r.net.addNetns('/run/netns/p1');
  r.net.addNetns('/run/netns/p2');
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push((JSON.parse(line) as { msg: string }).msg) });
  const server = new CniServer({ ...r.deps, cfg: { cniMtu: 1500, ipamMode: mode }, log });
  server.setReady(true);
  const dataDir = tempDir(t, 'host-local');
  const ipam = { type: 'host-local', dataDir, ranges: [[{ subnet: '10.98.0.0/24' }]], routes: [{ dst: '0.0.0.0/0' }, { dst: '192.0.2.0/24' }] };
  return { r, server, warnings, dataDir, ipam };
}

/** The addresses host-local holds (its data directory has one file per address). */
function held(dataDir: string): string[] {
  const dir = join(dataDir, 'cellium');
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)) : [];
}

const pod = (n: number) => ({ containerId: `c${n}`, netns: `/run/netns/p${n}`, path: '/usr/lib/cni', args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p${n}` });

t.test('ADD uses the plugin address, gateway and routes; DEL releases it, twice', { skip }, async (t) => {
  const { r, server, dataDir, ipam } = await delegatedRig(t);
  const before = r.deps.ipam.status();
  const resp = await server.handle(cniReq('ADD', pod(1), { ipam }));
  t.equal(resp.exitCode, 0, resp.body);
  const res = body(resp) as { ips: Array<{ address: string; gateway: string }>; routes: unknown[] };
  t.same(res.ips, [{ address: '10.98.0.2/32', gateway: '10.98.0.1', interface: 1 }], "host-local's first address and gateway");
  t.same(res.routes, [{ dst: '0.0.0.0/0', gw: '10.98.0.1' }, { dst: '192.0.2.0/24', gw: '10.98.0.1' }], "the plugin's routes");
  t.same(r.net.namespaces.get('/run/netns/p1')!.routes.map((x) => x.dst), ['0.0.0.0/0', '192.0.2.0/24'], 'configured in the pod');
  t.same(held(dataDir), ['10.98.0.2'], 'host-local holds it');
  const ep = r.deps.manager.lookup('cni-attachment-id:c1:eth0')!;
  t.equal(ep.ipv4, '10.98.0.2');
  t.equal(ep.ipamSource, 'delegated-plugin:host-local', 'the endpoint records the source');
  t.same(r.deps.ipam.status(), before, "the node pool was not touched");
  t.equal(r.deps.ipam.ownerOf('10.98.0.2'), undefined);

  const check = await server.handle(cniReq('CHECK', pod(1), { ipam, prevResult: JSON.parse(resp.body) }));
  t.equal(check.exitCode, 0, `CHECK runs host-local CHECK too: ${check.body}`);

  for (const round of [1, 2]) {
    const del = await server.handle(cniReq('DEL', pod(1), { ipam }));
    t.equal(del.exitCode, 0, `DEL ${round}: ${del.body}`);
  }
  t.same(held(dataDir), [], 'released by the IPAM DEL');
  t.same(r.deps.ipam.status(), before);
});

t.test('a failure after the IPAM ADD releases the address with an IPAM DEL', { skip }, async (t) => {
  const { r, server, dataDir, ipam } = await delegatedRig(t);
  r.net.fail('addRoute', 'pod');
  const resp = await server.handle(cniReq('ADD', pod(1), { ipam }));
  t.equal(resp.exitCode, 1);
  t.match(body(resp).msg, /configuring eth0/);
  t.same(held(dataDir), [], 'nothing left in host-local');
  r.net.clearFailures();
  const again = await server.handle(cniReq('ADD', pod(1), { ipam }));
  t.equal(again.exitCode, 0, again.body);
  t.match(body(again), { ips: [{ address: /^10\.98\.0\.\d+\/32$/ }] }, 'ADD works once the failure is gone');
  t.equal(held(dataDir).length, 1, 'one address held');
});

t.test('bad ipam sections are code 7 naming the field; plugin errors keep their code', { skip }, async (t) => {
  const { server, ipam } = await delegatedRig(t);
  const cases: Array<[unknown, RegExp]> = [
    [undefined, /invalid network configuration: ipam is required: the agent runs with --ipam=delegated-plugin/],
    ['host-local', /invalid network configuration: ipam must be an object/],
    [{}, /invalid network configuration: ipam.type is required/],
    [{ type: '' }, /ipam.type is required/],
    [{ type: '../../bin/sh' }, /ipam.type "..\/..\/bin\/sh" is not a plugin name: .*never a path/],
    [{ type: '/usr/lib/cni/host-local' }, /ipam.type .* is not a plugin name/],
    [{ type: 'no-such-ipam' }, /ipam.type "no-such-ipam": no such plugin in CNI_PATH "\/usr\/lib\/cni"/],
  ];
  for (const [section, msg] of cases) {
    const resp = await server.handle(cniReq('ADD', pod(1), section === undefined ? {} : { ipam: section }));
    const b = body(resp) as { code: number; msg: string };
    t.equal(b.code, 7, `code 7 for ${JSON.stringify(section)}`);
    t.match(b.msg, msg);
  }
  // host-local's own error (a range that is not a subnet): its code and message are carried through
  const resp = await server.handle(cniReq('ADD', pod(1), { ipam: { ...ipam, ranges: [[{ subnet: 'banana' }]] } }));
  const b = body(resp) as { code: number; msg: string };
  t.not(b.code, 0);
  t.match(b.msg, /^IPAM plugin host-local ADD: .*banana/);
});

t.test('cluster-pool: an ipam section is ignored with one warning per network', { skip }, async (t) => {
  const { r, server, warnings, ipam, dataDir } = await delegatedRig(t, 'cluster-pool');
  for (const n of [1, 2]) {
    const resp = await server.handle(cniReq('ADD', pod(n), { ipam }));
    t.equal(resp.exitCode, 0, resp.body);
    t.match(body(resp), { ips: [{ address: /^10\.200\.0\.\d+\/32$/ }] }, 'the node pool gives the address');
  }
  t.equal(warnings.filter((w) => w.includes('"ipam" section')).length, 1, 'one warning for network cellium');
  t.match(warnings[0], /network "cellium" has an "ipam" section, which is ignored.*--ipam=delegated-plugin/);
  t.same(held(dataDir), [], 'host-local never ran');
  t.equal(r.deps.manager.lookup('cni-attachment-id:c1:eth0')!.ipamSource, undefined, 'no ipam source property');
});

t.test('DEL without an ipam section still removes the pod; a node-pool holder of the same address keeps it', { skip }, async (t) => {
  const { r, server, warnings, dataDir, ipam } = await delegatedRig(t);
  // the plugin's range overlaps the node pool, where someone else holds 10.200.0.2
  r.deps.ipam.allocateIP('10.200.0.2', 'someone-else');
  const overlap = { ...ipam, ranges: [[{ subnet: '10.200.0.0/24' }]] };
  const add = await server.handle(cniReq('ADD', pod(1), { ipam: overlap }));
  t.equal(add.exitCode, 0, add.body);
  t.match(body(add), { ips: [{ address: '10.200.0.2/32' }] });
  const del = await server.handle(cniReq('DEL', pod(1)));
  t.equal(del.exitCode, 0, `DEL without ipam succeeds: ${del.body}`);
  t.equal(r.deps.manager.lookup('cni-attachment-id:c1:eth0'), undefined, 'the endpoint is gone');
  t.match(warnings, [/CNI DEL without an ipam section/]);
  t.equal(r.deps.ipam.ownerOf('10.200.0.2'), 'someone-else', "the node pool's allocation is untouched");
  t.same(held(dataDir), ['10.200.0.2'], 'host-local still holds it (the next DEL with the section releases it)');
  t.equal((await server.handle(cniReq('DEL', pod(1), { ipam: overlap }))).exitCode, 0);
  t.same(held(dataDir), []);
});

const gcReq = (valid: Array<{ containerID: string; ifname: string }>, conf: Record<string, unknown>, path = '/usr/lib/cni') =>
  cniReq('GC', { containerId: '', netns: '', ifName: '', path }, { ...conf, 'cni.dev/valid-attachments': valid }, '1.1.0');

t.test('GC: a plugin without CNI 1.1 (host-local 1.1) gets an IPAM DEL for each removed attachment', { skip }, async (t) => {
  const { r, server, dataDir, ipam } = await delegatedRig(t);
  for (const n of [1, 2]) t.equal((await server.handle(cniReq('ADD', pod(n), { ipam }))).exitCode, 0);
  t.equal(held(dataDir).length, 2);
  const gc = await server.handle(gcReq([{ containerID: 'c1', ifname: 'eth0' }], { ipam }));
  t.equal(gc.exitCode, 0, gc.body);
  t.ok(r.deps.manager.lookup('cni-attachment-id:c1:eth0'), 'the valid attachment stays');
  t.equal(r.deps.manager.lookup('cni-attachment-id:c2:eth0'), undefined, 'the other is removed');
  t.same(held(dataDir), ['10.98.0.2'], "host-local released the removed attachment's address only");
  const again = await server.handle(gcReq([{ containerID: 'c1', ifname: 'eth0' }], { ipam }));
  t.equal(again.exitCode, 0, 'a second GC has nothing to do');
  t.same(held(dataDir), ['10.98.0.2']);
});

/** A CNI 1.1 IPAM plugin written for the test: it answers VERSION with 1.1.0 and records each call's command and stdin. */
function recordingPlugin(t: Parameters<typeof rig>[0], failDel = false): { dir: string; calls: () => Array<{ command: string; stdin: Record<string, unknown> }> } {
  const dir = tempDir(t, 'plugins');
  const log = join(dir, 'calls');
  writeFileSync(join(dir, 'rec-ipam'), `#!/bin/sh
in=$(cat)
printf '%s\\t%s\\n' "$CNI_COMMAND" "$(printf '%s' "$in" | tr -d '\\n')" >> ${log}
case "$CNI_COMMAND" in
  VERSION) echo '{"cniVersion":"1.1.0","supportedVersions":["0.4.0","1.0.0","1.1.0"]}' ;;
  ADD) echo '{"cniVersion":"1.1.0","ips":[{"address":"10.97.0.'"$(printf '%s' "$CNI_CONTAINERID" | tr -dc 0-9)"'/32","gateway":"10.97.0.1"}]}' ;;
  DEL) ${failDel ? `echo '{"code":11,"msg":"store is locked"}'; exit 1` : 'exit 0'} ;;
esac
`, { mode: 0o755 });
  return {
    dir,
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').map((l) => {
      const [command, stdin] = l.split('\t');
      return { command: command!, stdin: JSON.parse(stdin!) as Record<string, unknown> };
    }) : []),
  };
}

t.test('GC: a CNI 1.1 plugin gets the GC itself, with the valid attachments', { skip }, async (t) => {
  const { r, server } = await delegatedRig(t);
  const plugin = recordingPlugin(t);
  const ipam = { type: 'rec-ipam' };
  for (const n of [1, 2]) t.equal((await server.handle(cniReq('ADD', { ...pod(n), path: plugin.dir }, { ipam }))).exitCode, 0);
  const valid = [{ containerID: 'c1', ifname: 'eth0' }];
  const gc = await server.handle(gcReq(valid, { ipam }, plugin.dir));
  t.equal(gc.exitCode, 0, gc.body);
  t.equal(r.deps.manager.lookup('cni-attachment-id:c2:eth0'), undefined, 'the stale endpoint is removed');
  const gcs = plugin.calls().filter((c) => c.command === 'GC');
  t.equal(gcs.length, 1, 'the plugin got one GC');
  t.same(gcs[0]!.stdin['cni.dev/valid-attachments'], valid, 'with the runtime valid attachments');
  t.equal(plugin.calls().filter((c) => c.command === 'DEL').length, 0, 'and no DEL');
});

t.test('GC: IPAM DEL failures are reported after every attachment was tried; the next GC retries', { skip }, async (t) => {
  const { r, server } = await delegatedRig(t);
  const good = recordingPlugin(t);
  const ipam = { type: 'rec-ipam' };
  for (const n of [1, 2]) t.equal((await server.handle(cniReq('ADD', { ...pod(n), path: good.dir }, { ipam }))).exitCode, 0);
  // the same plugin name in another directory: a pre-1.1 plugin whose DEL fails
  const bad = recordingPlugin(t, true);
  writeFileSync(join(bad.dir, 'rec-ipam'), readFileSync(join(bad.dir, 'rec-ipam'), 'utf8').replace('"supportedVersions":["0.4.0","1.0.0","1.1.0"]', '"supportedVersions":["0.4.0","1.0.0"]'));
  const gc = await server.handle(gcReq([], { ipam }, bad.dir));
  const b = body(gc) as { code: number; msg: string; details: string };
  t.equal(b.code, 5, gc.body);
  t.match(b.msg, /IPAM plugin rec-ipam DEL failed during GC for 2 attachments \(the next GC retries them\)/);
  t.match(b.details, /c1:eth0: .*store is locked/);
  t.equal(r.deps.manager.getEndpoints().length, 0, 'both endpoints were removed all the same');
  const dels = bad.calls().filter((c) => c.command === 'DEL');
  t.equal(dels.length, 2, 'each removed attachment was tried');
  t.equal(dels[0]!.stdin.cniVersion, '1.0.0', "the DEL's netconf is at the plugin's newest version");
  t.notOk('cni.dev/valid-attachments' in dels[0]!.stdin, 'without the GC-only key');
});

t.test('GC without an ipam section removes stale delegated endpoints and says nothing was released', { skip }, async (t) => {
  const { r, server, warnings, dataDir, ipam } = await delegatedRig(t);
  t.equal((await server.handle(cniReq('ADD', pod(1), { ipam }))).exitCode, 0);
  const gc = await server.handle(gcReq([], {}));
  t.equal(gc.exitCode, 0, gc.body);
  t.equal(r.deps.manager.getEndpoints().length, 0);
  t.match(warnings.join('\n'), /CNI GC without an ipam section: no IPAM plugin to release/);
  t.same(held(dataDir), ['10.98.0.2'], 'host-local keeps it: nothing named the plugin');
});
