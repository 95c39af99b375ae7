// Delegated IPAM over a FakeNet with Debian's real host-local plugin (no root needed: host-local
// only writes its data directory): ADD takes the plugin's address, gateway and routes and leaves
// the node pool alone; a failure after the IPAM ADD releases the address (IPAM DEL); DEL is
// idempotent; bad ipam sections are clear code-7 errors naming the field; cluster-pool warns once
// per network about an ignored ipam section.
import t from 'tap';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** The attachments the agent records as holding plugin addresses. */
const recorded = (r: Awaited<ReturnType<typeof rig>>): string[] => {
  const dir = r.deps.ipamRecords.dir;
  return existsSync(dir) ? readdirSync(dir).map((f) => (JSON.parse(readFileSync(join(dir, f), 'utf8')) as { containerId: string }).containerId).sort() : [];
};

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

t.test('a repeated ADD (a runtime retry) replaces the attachment: the plugin releases the old address first', { skip }, async (t) => {
  const { r, server, dataDir, ipam } = await delegatedRig(t);
  for (const round of [1, 2]) {
    const resp = await server.handle(cniReq('ADD', pod(1), { ipam }));
    t.equal(resp.exitCode, 0, `ADD ${round}: ${resp.body}`);
  }
  t.equal(held(dataDir).length, 1, 'host-local holds one address (it refuses a second one for the same container)');
  t.equal(r.deps.manager.getEndpoints().length, 1);
  t.same(recorded(r), ['c1']);
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
  const { r, server, ipam } = await delegatedRig(t);
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
  // a relative CNI_PATH entry is the runtime's directory, not the agent's: not searched, and said so
  const rel = body(await server.handle(cniReq('ADD', { ...pod(1), path: 'lib/cni:/nonexistent' }, { ipam: { type: 'host-local' } }))) as { code: number; msg: string };
  t.equal(rel.code, 7);
  t.match(rel.msg, /ipam.type "host-local": no such plugin in CNI_PATH "lib\/cni:\/nonexistent" \(install it there, or fix the name; relative entries such as "lib\/cni" are not searched: give absolute directories\)/);
  t.same(recorded(r), [], 'no IPAM record: no plugin ran');
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

/**
 * An IPAM plugin written for the test: it records each call's command and stdin, "holds" an address
 * per container from its ADD until its DEL (a file `held-<id>`), answers VERSION with `versions`,
 * and misbehaves on a command when told to (`behave(command, how)`): a CNI error, a plain-text
 * failure, or garbage on stdout with exit 0 — after an ADD has taken its address.
 */
function recordingPlugin(t: Parameters<typeof rig>[0], versions = ['0.4.0', '1.0.0', '1.1.0']) {
  const dir = tempDir(t, 'plugins');
  const log = join(dir, 'calls');
  writeFileSync(join(dir, 'rec-ipam'), `#!/bin/sh
in=$(cat)
printf '%s\t%s\n' "$CNI_COMMAND" "$(printf '%s' "$in" | tr -d '\n')" >> ${log}
[ "$CNI_COMMAND" = ADD ] && touch "${dir}/held-$CNI_CONTAINERID"
case "$(cat "${dir}/behave-$CNI_COMMAND" 2>/dev/null)" in
  cni-error) echo '{"code":11,"msg":"store is locked"}'; exit 1 ;;
  text) echo 'allocator crashed: segfault' >&2; exit 2 ;;
  garbage) echo 'ok! {not json'; exit 0 ;;
esac
case "$CNI_COMMAND" in
  VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":${JSON.stringify(versions)}}' ;;
  ADD) echo '{"cniVersion":"1.0.0","ips":[{"address":"10.97.0.'"$(printf '%s' "$CNI_CONTAINERID" | tr -dc 0-9)"'/32","gateway":"10.97.0.1"}]}' ;;
  DEL) rm -f "${dir}/held-$CNI_CONTAINERID" ;;
  GC) for f in "${dir}"/held-*; do
        [ -e "$f" ] || continue
        case "$in" in *'"containerID":"'"\${f##*/held-}"'"'*) ;; *) rm -f "$f" ;; esac
      done ;;
esac
`, { mode: 0o755 });
  return {
    dir,
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').map((l) => {
      const [command, stdin] = l.split('\t');
      return { command: command!, stdin: JSON.parse(stdin!) as Record<string, unknown> };
    }) : []),
    /** The containers whose address the plugin holds. */
    held: () => readdirSync(dir).filter((f) => f.startsWith('held-')).map((f) => f.slice(5)).sort(),
    behave: (command: string, how?: 'cni-error' | 'text' | 'garbage') => (how ? writeFileSync(join(dir, `behave-${command}`), how) : rmSync(join(dir, `behave-${command}`), { force: true })),
  };
}


t.test('GC: a CNI 1.1 plugin gets the GC itself, with the valid attachments', { skip }, async (t) => {
  const { r, server } = await delegatedRig(t);
  const plugin = recordingPlugin(t);
  const ipam = { type: 'rec-ipam' };
  for (const n of [1, 2]) t.equal((await server.handle(cniReq('ADD', { ...pod(n), path: plugin.dir }, { ipam }))).exitCode, 0);
  t.same(plugin.held(), ['c1', 'c2']);
  const valid = [{ containerID: 'c1', ifname: 'eth0' }];
  const gc = await server.handle(gcReq(valid, { ipam }, plugin.dir));
  t.equal(gc.exitCode, 0, gc.body);
  t.equal(r.deps.manager.lookup('cni-attachment-id:c2:eth0'), undefined, 'the stale endpoint is removed');
  const gcs = plugin.calls().filter((c) => c.command === 'GC');
  t.equal(gcs.length, 1, 'the plugin got one GC');
  t.same(gcs[0]!.stdin['cni.dev/valid-attachments'], valid, 'with the runtime valid attachments');
  t.equal(plugin.calls().filter((c) => c.command === 'DEL').length, 0, 'and no DEL');
  t.same(plugin.held(), ['c1'], 'the plugin released the stale one itself');
  t.same(recorded(r), ['c1'], 'only the valid attachment stays recorded');
});

t.test('GC: IPAM DEL failures are reported after every attachment was tried; the next GC retries them', { skip }, async (t) => {
  const { r, server } = await delegatedRig(t);
  const plugin = recordingPlugin(t, ['0.4.0', '1.0.0']); // no 1.1: an IPAM DEL per stale attachment
  const ipam = { type: 'rec-ipam' };
  for (const n of [1, 2]) t.equal((await server.handle(cniReq('ADD', { ...pod(n), path: plugin.dir }, { ipam }))).exitCode, 0);
  t.same(recorded(r), ['c1', 'c2'], 'both attachments recorded');
  plugin.behave('DEL', 'cni-error');
  const gc = await server.handle(gcReq([], { ipam }, plugin.dir));
  const b = body(gc) as { code: number; msg: string; details: string };
  t.equal(b.code, 5, gc.body);
  t.match(b.msg, /IPAM plugin rec-ipam DEL failed during GC for 2 attachments \(they stay recorded; the next GC retries them\)/);
  t.match(b.details, /c1:eth0: .*store is locked/);
  t.equal(r.deps.manager.getEndpoints().length, 0, 'both endpoints were removed all the same');
  const dels = plugin.calls().filter((c) => c.command === 'DEL');
  t.equal(dels.length, 2, 'each stale attachment was tried');
  t.equal(dels[0]!.stdin.cniVersion, '1.0.0', "the DEL's netconf is at the plugin's newest version");
  t.notOk('cni.dev/valid-attachments' in dels[0]!.stdin, 'without the GC-only key');
  t.same(plugin.held(), ['c1', 'c2'], 'the plugin still holds both');
  t.same(recorded(r), ['c1', 'c2'], 'so both stay recorded');

  plugin.behave('DEL');
  const retry = await server.handle(gcReq([], { ipam }, plugin.dir));
  t.equal(retry.exitCode, 0, retry.body);
  t.same(plugin.held(), [], 'the next GC released both');
  t.same(recorded(r), [], 'and forgot them');
  const calls = plugin.calls().length;
  t.equal((await server.handle(gcReq([], { ipam }, plugin.dir))).exitCode, 0);
  t.equal(plugin.calls().filter((c) => c.command === 'DEL').length, 4, 'a third GC has nothing to release');
  t.ok(plugin.calls().length > calls);
});

t.test('an IPAM plugin that fails or prints garbage: a clear CNI error, and its address is released', { skip }, async (t) => {
  const { r, server } = await delegatedRig(t);
  const plugin = recordingPlugin(t);
  const ipam = { type: 'rec-ipam' };
  const cases: Array<['cni-error' | 'text' | 'garbage', number, RegExp]> = [
    ['cni-error', 11, /^IPAM plugin rec-ipam ADD: store is locked$/],
    ['text', 5, /^IPAM plugin rec-ipam ADD failed: allocator crashed: segfault$/],
    ['garbage', 5, /^IPAM plugin rec-ipam ADD printed an unusable result: /],
  ];
  for (const [how, code, msg] of cases) {
    plugin.behave('ADD', how);
    const resp = await server.handle(cniReq('ADD', { ...pod(1), path: plugin.dir }, { ipam }));
    const b = body(resp) as { code: number; msg: string };
    t.equal(resp.exitCode, 1, how);
    t.equal(b.code, code, `${how}: code ${code}`);
    t.match(b.msg, msg, `${how}: the message names the plugin and what it did`);
    t.same(plugin.held(), [], `${how}: the IPAM DEL of the rollback released what the plugin took`);
    t.same(recorded(r), [], `${how}: nothing left recorded`);
    t.equal(r.deps.manager.getEndpoints().length, 0, `${how}: no endpoint`);
  }
  t.match(plugin.calls().filter((c) => c.command === 'ADD' || c.command === 'DEL').map((c) => c.command), ['ADD', 'DEL', 'ADD', 'DEL', 'ADD', 'DEL']);

  // the rollback's own IPAM DEL fails: the attachment stays recorded, and a GC releases it
  plugin.behave('ADD', 'garbage');
  plugin.behave('DEL', 'text');
  t.equal((await server.handle(cniReq('ADD', { ...pod(1), path: plugin.dir }, { ipam }))).exitCode, 1);
  t.same(plugin.held(), ['c1']);
  t.same(recorded(r), ['c1'], 'recorded: the release is owed');
  plugin.behave('DEL');
  t.equal((await server.handle(gcReq([], { ipam }, plugin.dir))).exitCode, 0);
  t.same(plugin.held(), [], 'the GC released it');
  t.same(recorded(r), []);
});

t.test('GC with host-local: a DEL that could not release (no ipam section) is released by the next GC of its network, also after a restart; another network\'s GC leaves it all alone', { skip }, async (t) => {
  const { r, server, dataDir, ipam } = await delegatedRig(t);
  for (const n of [1, 2]) t.equal((await server.handle(cniReq('ADD', pod(n), { ipam }))).exitCode, 0);
  t.equal((await server.handle(cniReq('DEL', pod(2)))).exitCode, 0, 'a DEL without the ipam section');
  t.same(held(dataDir), ['10.98.0.2', '10.98.0.3'], 'host-local still holds its address');
  t.same(recorded(r), ['c1', 'c2']);
  // a new server over the same state directory: the agent restarted
  const restarted = new CniServer({ ...r.deps, cfg: { cniMtu: 1500, ipamMode: 'delegated-plugin' } });
  restarted.setReady(true);
  // a runtime's GC lists only its own network's attachments
  const other = await restarted.handle(cniReq('GC', { containerId: '', netns: '', ifName: '', path: '/usr/lib/cni' }, { name: 'other', ipam, 'cni.dev/valid-attachments': [] }, '1.1.0'));
  t.equal(other.exitCode, 0, other.body);
  t.same(held(dataDir), ['10.98.0.2', '10.98.0.3'], "another network's GC releases none of this network's addresses");
  t.ok(r.deps.manager.lookup('cni-attachment-id:c1:eth0'), "nor removes this network's endpoint (it records its network)");
  t.equal(r.deps.manager.lookup('cni-attachment-id:c1:eth0')!.cniNetwork, 'cellium');
  const gc = await restarted.handle(gcReq([{ containerID: 'c1', ifname: 'eth0' }], { ipam }));
  t.equal(gc.exitCode, 0, gc.body);
  t.same(held(dataDir), ['10.98.0.2'], "this network's GC released the stale one only");
  t.same(recorded(r), ['c1']);
  t.ok(r.deps.manager.lookup('cni-attachment-id:c1:eth0'), 'the valid attachment stays');
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
