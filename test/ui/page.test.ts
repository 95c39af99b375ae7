// The flow page against the real Hubble server (HubbleServer on a unix socket, its observer fed
// monitor events as the monitor hands them over) in headless Chromium (unprivileged): a flow shows
// within a second, filters apply, a drop's details show when clicked, the service map colours the
// edge; strings an attacker controls (labels, pod names) stay text; bad filters and Host headers
// are refused; an unreachable Hubble socket and a non-loopback address fail `cellium ui` clearly.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { silentLogger } from '../../src/hive/index.js';
import { HubbleObserver, HubbleServer } from '../../src/cells/hubble/index.js';
import type { EnrichedEvent, FlowEndpoint, MonitorEvent } from '../../src/monitor/index.js';
import { runCli } from '../../src/cli/main.js';
import { FlowPage, UiHubbleUnreachableError } from '../../src/ui/index.js';
import { chromiumMissing, keepScreenshot, launch } from './browser.js';

const EVIL_LABEL = 'k8s:app=<img src=x onerror="window.__pwned=1">';
const EVIL_POD = 'evil<script>window.__pwned=2</script>';

const client: FlowEndpoint = { ID: 11, identity: 1001, labels: ['k8s:app=client', 'k8s:io.kubernetes.pod.namespace=shop'], pod_name: 'shop/client', namespace: 'shop' };
const server: FlowEndpoint = { ID: 12, identity: 1002, labels: ['k8s:app=server', 'k8s:io.kubernetes.pod.namespace=shop'], pod_name: 'shop/server', namespace: 'shop' };
const evil: FlowEndpoint = { ID: 13, identity: 1003, labels: [EVIL_LABEL, 'k8s:io.kubernetes.pod.namespace=shop'], pod_name: `shop/${EVIL_POD}`, namespace: 'shop' };

const event = (o: Partial<MonitorEvent>): MonitorEvent => ({
  type: 'trace', reason: '', direction: 'ingress', endpointId: 12, protocol: 6, dport: 80, srcIdentity: 1001, dstIdentity: 1002, ifIndex: 9,
  src: '10.0.0.1', dst: '10.0.0.2', icmpType: 0, sport: 40000, tcpFlags: 2, ctStatus: 'new', match: 'none', action: 'allow', len: 60, ...o,
});
const drop = (sport: number): MonitorEvent => event({ type: 'drop', reason: 'policy', dport: 81, sport, action: 'deny' });

/** The Hubble server with its observer on a temp socket, and the page on 127.0.0.1:any. */
async function setup(t: Test): Promise<{ observer: HubbleObserver; url: string; socket: string; feed: (e: MonitorEvent, src?: FlowEndpoint, dst?: FlowEndpoint) => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-ui-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socket = join(dir, 'hubble.sock');
  const observer = new HubbleObserver(1023, 'node-a');
  const hubble = new HubbleServer(observer, socket, 'test', silentLogger());
  await hubble.start();
  const page = new FlowPage(socket, { host: '127.0.0.1', port: 0 });
  const url = await page.start();
  t.teardown(async () => {
    await page.stop();
    observer.stop();
    await hubble.stop();
  });
  const feed = (e: MonitorEvent, src = client, dst = server): void =>
    observer.onRecord({ kind: 'event', event: { event: e, time: new Date().toISOString(), source: src, destination: dst } satisfies EnrichedEvent });
  return { observer, url, socket, feed };
}

/** GET with a chosen Host header. */
function get(url: string, host?: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, headers: host ? { Host: host } : {} }, (res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('the HTTP side: bad filters, foreign Host headers, security headers', async (t) => {
  const { url } = await setup(t);
  const bad = await get(`${url}api/check?port=99999`);
  t.equal(bad.status, 400);
  t.match(JSON.parse(bad.body), { error: /filter port "99999": expected a port number 0-65535/ });
  t.equal((await get(`${url}api/flows?verdict=maybe`)).status, 400, 'the stream refuses it too');
  t.match(JSON.parse((await get(`${url}api/check?label=app%3Dweb`)).body), { request: { follow: true, whitelist: [{ sourceLabel: ['app=web'] }, { destinationLabel: ['app=web'] }] } });
  const rebound = await get(url, 'attacker.example:12000');
  t.equal(rebound.status, 403, 'a page on another name (DNS rebinding) is refused');
  t.match(rebound.body, /answers only to loopback names/);
  const page = await get(url);
  t.equal(page.status, 200);
  t.match(String(page.headers['content-security-policy']), /script-src 'self'/, "only the page's own scripts run");
  t.match(JSON.parse((await get(`${url}api/status`)).body), { maxFlows: 1023, version: 'test' });
});

t.test('the page in Chromium: live flows, filters, a drop\'s details, the map, untrusted strings stay text', { skip: chromiumMissing() }, async (t) => {
  const { url, feed } = await setup(t);
  const browser = await launch(t);
  // without the page's CSP: escaping alone must keep an attacker's markup inert (and the tests may evaluate)
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  const errors: string[] = [];
  page.on('pageerror', (e: Error) => errors.push(e.message));
  await page.goto(url);
  await page.waitForFunction("document.getElementById('status').textContent.startsWith('live')");

  // a forwarded flow and a drop from a pod whose name and label are an attacker's
  const start = Date.now();
  feed(event({}));
  feed(drop(40001), evil, server);
  await page.waitForSelector('#flows tbody tr.DROPPED', { timeout: 1000 });
  t.comment(`the flows showed ${Date.now() - start} ms after the observer took them`);
  t.equal(await page.locator('#flows tbody tr').count(), 2);
  t.equal(await page.locator('#flows tbody tr.DROPPED td.src').textContent(), `shop/${EVIL_POD}:40001`, 'the pod name is shown as text');
  t.equal(await page.evaluate('window.__pwned'), undefined, 'no injected script ran');
  t.equal(await page.locator('#flows img, #flows script, #details img, #map img').count(), 0, 'no injected element');

  // the service map: one green edge, one red
  t.equal(await page.locator('#map line[data-verdict="fwd"][data-src="shop/client"][data-dst="shop/server"]').count(), 1, 'client -> server forwarded: green');
  t.equal(await page.locator(`#map line[data-verdict="drop"][data-dst="shop/server"]`).count(), 1, 'the drop: red');
  t.equal(await page.locator('#map g.node text').allTextContents().then((a: string[]) => a.includes(`shop/${EVIL_POD}`)), true, 'the map names the pod as text');

  // a drop's details
  await page.locator('#flows tbody tr.DROPPED').click();
  t.equal(await page.locator('#details h3').textContent(), 'Dropped: POLICY_DENIED');
  t.equal(await page.locator('#details dd.drop-reason').textContent(), 'POLICY_DENIED');
  t.match(await page.locator('#details').textContent(), EVIL_LABEL, 'the label as it is');
  t.match(await page.locator('#details pre.trace').textContent(), /^cellium policy trace -s k8s:app=<img src=x onerror="window.__pwned=1"> .*-d k8s:app=server .*--dport 81\/TCP$/, 'how to see the rules');
  t.equal(await page.locator('#details img').count(), 0);
  await keepScreenshot(page, 'page-drop-details');

  // filter: only forwarded flows; the drop goes and new flows of that kind come
  await page.selectOption('select[name="verdict"]', 'FORWARDED');
  await page.click('button[type="submit"]');
  await page.waitForFunction("document.querySelectorAll('#flows tbody tr.DROPPED').length === 0 && document.querySelectorAll('#flows tbody tr').length === 1");
  t.match(page.url(), /\?verdict=FORWARDED$/, 'the filter is in the address');
  feed(drop(40002), evil, server);
  feed(event({ sport: 40003 }));
  await page.waitForFunction("document.querySelectorAll('#flows tbody tr').length === 2", undefined, { timeout: 1000 });
  t.equal(await page.locator('#flows tbody tr.DROPPED').count(), 0, 'no drop passes the filter');

  // by pod: only that pod's flows (the stored ones first)
  await page.selectOption('select[name="verdict"]', '');
  await page.fill('input[name="pod"]', 'shop/evil');
  await page.click('button[type="submit"]');
  await page.waitForFunction("document.querySelectorAll('#flows tbody tr').length === 2");
  t.same(await page.locator('#flows tbody td.src').allTextContents(), [`shop/${EVIL_POD}:40002`, `shop/${EVIL_POD}:40001`], '--pod: its two drops, newest first');

  // a bad filter: the page says which and why, and follows nothing
  await page.fill('input[name="port"]', '99999');
  await page.click('button[type="submit"]');
  await page.waitForSelector('#error:not([hidden])');
  t.match(await page.locator('#error').textContent(), /filter port "99999": expected a port number 0-65535/);
  t.equal(await page.locator('#flows tbody tr').count(), 0);
  await keepScreenshot(page, 'page-bad-filter');
  t.same(errors, [], 'no script errors');
});

t.test('cellium ui refuses a non-loopback address and an unreachable Hubble socket', async (t) => {
  const io = (): { out: string[]; err: string[]; io: Parameters<typeof runCli>[1] } => {
    const out: string[] = [];
    const err: string[] = [];
    return { out, err, io: { stdout: (s) => out.push(s), stderr: (s) => err.push(s), readFile: async () => '', env: {} } };
  };
  const a = io();
  t.equal(await runCli(['ui', '--address', '0.0.0.0:12000'], a.io), 2);
  t.match(a.err.join(''), /^cellium: --address "0.0.0.0:12000": 0.0.0.0 is not a loopback address: the page shows the node's flows without authentication/);
  const b = io();
  t.equal(await runCli(['ui', '--hubble-socket-path', '/nonexistent/hubble.sock', '--address', '127.0.0.1:0'], b.io), 1);
  t.match(b.err.join(''), /cannot reach the Hubble server at unix:\/\/\/nonexistent\/hubble.sock .*start the agent with --enable-hubble/);
  const p = new FlowPage('/nonexistent/hubble.sock', { host: '127.0.0.1', port: 0 });
  await t.rejects(p.start(), UiHubbleUnreachableError);
  await p.stop();
});
