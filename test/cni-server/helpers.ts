// Shared helpers of the CNI server tests: the agent's real control-plane cells (memory datapath),
// CNI requests as the shim sends them, and a CniServer over a FakeNet.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cell } from '../../src/hive/index.js';
import { silentLogger, testHive, type TestHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell } from '../../src/cells/identity/index.js';
import { ipamCell, IPAMToken } from '../../src/cells/ipam/index.js';
import { policyCell } from '../../src/cells/policy/index.js';
import { datapathCell } from '../../src/cells/datapath/index.js';
import { memoryDatapathCell } from '../../src/cells/datapath-memory/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointManagerToken, type EndpointAPIManager } from '../../src/cells/endpoint/index.js';
import { AttachmentJournal, AttachmentLedger, CniServer, IPAM_RECORDS_DIR, IpamRecords, JOURNAL_DIR, type CniDeps } from '../../src/cells/cni-server/index.js';
import type { CniRequest } from '../../src/cni/protocol.js';
import { FakeNet } from './fake-net.js';

/** The control plane the CNI server runs on (memory datapath). */
export const CONTROL_PLANE: readonly Cell[] = [statedirCell, identityCell, ipamCell, policyCell, datapathCell, memoryDatapathCell, endpointCell];

/** A temporary directory removed when the test ends. */
export function tempDir(t: TestLike, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `cellium-cni-${name}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A netconf text. */
export function netconf(extra: Record<string, unknown> = {}, cniVersion = '1.0.0'): string {
  return JSON.stringify({ cniVersion, name: 'cellium', type: 'cellium-cni', ...extra });
}

/** A request as the shim sends it. */
export function cniReq(command: CniRequest['command'], over: Partial<CniRequest> = {}, conf: Record<string, unknown> = {}, version = '1.0.0'): CniRequest {
  return { command, containerId: 'c1', netns: '/run/netns/p1', ifName: 'eth0', args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p1', path: '/opt/cni/bin', stdin: netconf(conf, version), ...over };
}

/** A started control plane and a CniServer over a FakeNet. */
export interface Rig {
  readonly h: TestHive;
  readonly net: FakeNet;
  readonly server: CniServer;
  readonly deps: CniDeps;
}

/** Builds the rig; `wrap` may replace the EndpointAPIManager (failure injection). */
export async function rig(t: TestLike, opts: { config?: Record<string, unknown>; wrap?: (api: EndpointAPIManager) => EndpointAPIManager } = {}): Promise<Rig> {
  const stateDir = tempDir(t, 'state');
  const h = await testHive(t, CONTROL_PLANE, { config: { 'state-dir': stateDir, ...opts.config } });
  const net = new FakeNet();
  const api = h.get(EndpointAPIManagerToken);
  const deps: CniDeps = {
    ipam: h.get(IPAMToken),
    endpoints: opts.wrap ? opts.wrap(api) : api,
    manager: h.get(EndpointManagerToken),
    net,
    cfg: { cniMtu: 1500 },
    ledger: new AttachmentLedger(),
    journal: new AttachmentJournal(join(stateDir, JOURNAL_DIR)),
    ipamRecords: new IpamRecords(join(stateDir, IPAM_RECORDS_DIR)),
    log: silentLogger(),
  };
  const server = new CniServer(deps);
  server.setReady(true);
  return { h, net, server, deps };
}

/** Parses a successful answer's body. */
export function body(resp: { body: string }): Record<string, unknown> {
  return resp.body === '' ? {} : (JSON.parse(resp.body) as Record<string, unknown>);
}
