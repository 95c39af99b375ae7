// Helpers of the API integration tests: the agent's real hive (every cell of src/cells.ts, memory
// datapath) on a temporary unix socket, a client over it, and a request helper that validates
// every answer against api/openapi.yaml.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentCells } from '../../src/cells.js';
import { Hive, silentLogger, testHive, type TestHive, type TestLike } from '../../src/hive/index.js';
import { CelliumClient } from '../../src/api/client.js';
import { createSpecValidator, type FieldError } from '../../src/api/spec.js';
import type { ApiResponse, RequestOptions } from '../../src/api/transport.js';
import type { EndpointChangeRequest } from '../../src/api/models.js';

/** The spec's validators, shared by the tests. */
export const validator = createSpecValidator();

/** A running agent and a client on its socket. */
export interface TestAgent {
  readonly h: TestHive;
  readonly dir: string;
  readonly socketPath: string;
  readonly client: CelliumClient;
  /** Sends a request; `problems` are the answer's mismatches with the spec (status, body, headers); operationId `-` for paths the spec lacks (an Error body). */
  call(operationId: string, method: string, path: string, opts?: RequestOptions): Promise<ApiResponse & { problems: FieldError[] }>;
}

/** The flags the agent declares (the cell set grows; only isolate what exists). */
const FLAGS = new Set(new Hive(agentCells, { logger: silentLogger() }).config.entries().map((e) => e.flag));

/**
 * Flags that would otherwise point at the host's shared directories, each under `dir`; and socket
 * load balancing off (its default attaches to the machine's root cgroup: the socket LB test
 * attaches to a cgroup of its own).
 */
export function isolatedDirs(dir: string): Record<string, string> {
  const wanted: Record<string, string> = { 'state-dir': join(dir, 'state'), 'bpf-root': join(dir, 'bpf'), 'cni-delete-queue-dir': join(dir, 'delete-queue'), 'bpf-lb-sock': 'false' };
  return Object.fromEntries(Object.entries(wanted).filter(([flag]) => FLAGS.has(flag)));
}

/** Starts the whole agent (memory datapath) on a temporary socket; stopped when the test ends. */
export async function startAgent(t: TestLike, config: Record<string, unknown> = {}): Promise<TestAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-api-it-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 'run', 'cellium.sock');
  const h = await testHive(t, agentCells, {
    config: { ...isolatedDirs(dir), 'socket-path': socketPath, 'datapath-mode': 'memory', 'ipv4-range': '10.210.0.0/16', 'ipv6-range': 'fd00:210::/112', ...config },
  });
  const client = new CelliumClient({ socketPath });
  t.teardown(() => client.close());
  return {
    h,
    dir,
    socketPath,
    client,
    async call(operationId, method, path, opts = {}) {
      const res = await client.transport.request(method, path, opts);
      if (operationId === '-') return { ...res, problems: validator.model('Error', res.body) };
      return { ...res, problems: validator.response(operationId, res.status, res.body, res.headers as Record<string, string>) };
    },
  };
}

/** A change request for a pod the way the CNI plugin sends it. */
export function podRequest(n: number, ip: { ipv4?: string; ipv6?: string }, extra: Record<string, unknown> = {}): EndpointChangeRequest {
  const hex = (n % 256).toString(16).padStart(2, '0');
  return {
    'container-id': `c0ffee${n}`,
    'container-interface-name': 'eth0',
    'interface-name': `lxc${n}`,
    'interface-index': 100 + n,
    mac: `02:00:00:00:01:${hex}`,
    'host-mac': `02:00:00:00:02:${hex}`,
    addressing: ip,
    'k8s-pod-name': `web-${n}`,
    'k8s-namespace': 'default',
    labels: ['k8s:app=web'],
    state: 'waiting-for-identity',
    'sync-build-endpoint': true,
    ...extra,
  };
}
