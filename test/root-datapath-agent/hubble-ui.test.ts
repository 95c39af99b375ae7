// Privileged, BPF datapath (issue 28 point 4): the flow page of the real `cellium ui` command (the
// built CLI, a process) against the whole agent in this process with --enable-hubble, in headless
// Chromium, on real TCP traffic between two pods through the attached programs. The server pod
// accepts 80/TCP from the client and nothing else. The page, opened before the traffic, shows the
// flows within a second of a connection; the verdict filter keeps only the drops; a drop's
// details say POLICY_DENIED with both pods; the service map draws the client -> server edge in
// the colour of both verdicts; the screenshots are kept in .tap/artifacts/ui/.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { needs } from '../needs.js';
import { chromiumMissing, keepScreenshot, launch } from '../ui/browser.js';
import { SMALL_CT, appPolicy, peerPorts } from './ct-fixtures.js';
import { Cleanup, allocatePod, bpfRoot, cli, connects, endpointRequest, skipReason, startBpfAgent, tempDir, until } from './fixtures.js';

const POOL = '10.244.10.0/24';
const CELLIUM = join(import.meta.dirname, '..', '..', 'bin', 'cellium.js');

/** `cellium ui` as a process on 127.0.0.1:any; resolves with the page's URL (from its first line). */
function startUi(c: Cleanup, socket: string): Promise<string> {
  const ui = spawn(process.execPath, [CELLIUM, 'ui', '--hubble-socket-path', socket, '--address', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  c.teardown(() => new Promise<void>((resolve) => {
    if (ui.exitCode !== null) return resolve();
    ui.once('exit', () => resolve());
    ui.kill('SIGTERM');
  }));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    ui.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /^Flow page: (http:\/\/127\.0\.0\.1:\d+\/)/m.exec(out);
      if (m) resolve(m[1]!);
    });
    ui.stderr.on('data', (b: Buffer) => (err += b.toString()));
    ui.once('exit', (code) => reject(new Error(`cellium ui exited ${code}: ${err}`)));
  });
}

t.test('the flow page in Chromium shows real traffic live, filters it, and details a drop', { skip: skipReason() || needs('built') || chromiumMissing() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const dir = tempDir(c, 'agent');
  const socket = join(dir, 'hubble.sock');
  const agent = await startBpfAgent(c, root, POOL, { ...SMALL_CT, 'enable-hubble': true, 'hubble-event-buffer-capacity': 1023, 'hubble-socket-path': socket }, dir);
  const client = await allocatePod(c, agent.client, 'uiclient');
  const srv = await allocatePod(c, agent.client, 'uiserver');
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=uiclient']));
  await agent.client.createEndpoint(0, endpointRequest(srv, ['k8s:app=uiserver']));
  const pol = await cli(agent.socketPath, 'policy', 'import', appPolicy(agent.dir, 'uiserver', 'uiserver', { ingress: [peerPorts('fromEndpoints', 'uiclient', ['80/TCP'])] }), '--wait');
  t.equal(pol.code, 0, pol.err);

  const url = await startUi(c, socket);
  const browser = await launch(c);
  // without the page's CSP: escaping alone must keep an attacker's markup inert (and the tests may evaluate)
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  const errors: string[] = [];
  page.on('pageerror', (e: Error) => errors.push(e.message));
  await page.goto(`${url}?pod=default/uiserver`);
  await page.waitForFunction("document.getElementById('status').textContent.startsWith('live')");

  // a denied connection: the page shows its drop within a second of the SYN
  const start = Date.now();
  const denied = connects(client, srv, 81);
  const shown = await page.waitForSelector('#flows tbody tr.DROPPED', { timeout: 1000 }).then(() => true, () => false);
  const shownMs = Date.now() - start;
  t.ok(shown, 'the drop is on the page within a second of the connection attempt', { shownMs });
  t.comment(`the drop showed ${shownMs} ms after the connection attempt started`);
  t.notOk(await denied, 'the policy denies 81/TCP');

  // an allowed one: its flows too
  t.ok(await connects(client, srv, 80), 'the policy allows 80/TCP');
  await page.waitForFunction("[...document.querySelectorAll('#flows tbody tr.FORWARDED td.dst')].some((td) => td.textContent === 'default/uiserver:80')", undefined, { timeout: 1000 });
  t.pass('the allowed connection to default/uiserver:80 is on the page');

  // the service map: client -> server carries both verdicts
  await until(async () => (await page.locator('#map line[data-src="default/uiclient"][data-dst="default/uiserver"]').getAttribute('data-verdict')) === 'mixed', 2000, 50);
  t.equal(await page.locator('#map line[data-src="default/uiclient"][data-dst="default/uiserver"]').getAttribute('data-verdict'), 'mixed', 'the edge is in the colour of both verdicts');
  await keepScreenshot(page, 'root-live-flows');

  // the verdict filter: only the drops (the stored ones first, then new ones)
  await page.selectOption('select[name="verdict"]', 'DROPPED');
  await page.click('button[type="submit"]');
  await page.waitForFunction("document.querySelectorAll('#flows tbody tr.DROPPED').length > 0 && document.querySelectorAll('#flows tbody tr.FORWARDED').length === 0");
  const before = await page.locator('#flows tbody tr').count();
  t.notOk(await connects(client, srv, 81));
  t.ok(await connects(client, srv, 80));
  await page.waitForFunction(`document.querySelectorAll('#flows tbody tr').length > ${before}`, undefined, { timeout: 2000 });
  t.equal(await page.locator('#flows tbody tr.FORWARDED').count(), 0, 'no forwarded flow passes verdict=DROPPED');

  // a drop's details
  await page.locator('#flows tbody tr.DROPPED').first().click();
  t.equal(await page.locator('#details h3').textContent(), 'Dropped: POLICY_DENIED');
  const detail = (await page.locator('#details').textContent()) ?? '';
  t.match(detail, /sourcedefault\/uiclient:\d+/, 'the client pod');
  t.match(detail, /destinationdefault\/uiserver:81/, 'the server pod and the denied port');
  t.match(detail, new RegExp(`destination address${srv.ip.replace(/\./g, '\\.')}`));
  t.match(detail, /destination labelsk8s:app=uiserver/);
  t.match(await page.locator('#details pre.trace').textContent(), /cellium policy trace .*-s k8s:app=uiclient.*-d k8s:app=uiserver.*--dport 81\/TCP/);
  await keepScreenshot(page, 'root-drop-details');
  t.same(errors, [], 'no script errors');
});
