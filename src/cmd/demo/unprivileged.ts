/**
 * The demo without root: the same story on the in-memory datapath, driven through the agent's API,
 * with `cellium policy trace` showing the verdicts the datapath would apply.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CelliumClient } from '../../api/client.js';
import { DEMO_NAMESPACE, DEMO_POLICY } from './policy.js';
import { cli, startAgent, stopAgent, type Narrator } from './runner.js';

/** The demo pods: name, labels, IPv4. */
const PODS = [
  { name: 'client', labels: ['k8s:app=client'], ip: '10.233.0.10' },
  { name: 'server', labels: ['k8s:app=server'], ip: '10.233.0.20' },
  { name: 'stranger', labels: ['k8s:app=stranger'], ip: '10.233.0.30' },
];

const ns = `k8s:io.kubernetes.pod.namespace=${DEMO_NAMESPACE}`;

/** Runs the unprivileged story; throws when a verdict is not the expected one. */
export async function unprivilegedDemo(n: Narrator): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-demo-'));
  const socket = join(dir, 'cellium.sock');
  n.step('Start the agent on the in-memory datapath (not root: no BPF, no network namespaces)');
  const agent = await startAgent(n, ['--datapath-mode=memory', `--state-dir=${dir}/state`, `--socket-path=${socket}`, `--cni-delete-queue-dir=${dir}/delete-queue`,
    '--ipv4-range=10.233.0.0/24'], socket);
  const client = new CelliumClient({ socketPath: socket });
  try {
    await cli(n, socket, ['status']);

    n.step('Create three endpoints the way the CNI plugin does: PUT /v1/endpoint/{id} with sync-build-endpoint');
    for (const p of PODS) {
      const ep = await client.createEndpoint(0, {
        'container-id': `demo-${p.name}`,
        'interface-name': `lxcdemo${p.name.slice(0, 6)}`,
        'container-interface-name': 'eth0',
        addressing: { ipv4: p.ip },
        'k8s-pod-name': p.name,
        'k8s-namespace': DEMO_NAMESPACE,
        labels: p.labels,
        state: 'waiting-for-identity',
        'sync-build-endpoint': true,
      });
      n.say(`${p.name}: endpoint ${ep.id}, ${p.ip}, state ${ep.status?.state}`);
    }
    await cli(n, socket, ['endpoint', 'list']);

    const trace = async (from: string, to: string, dport: string, expect: 'allowed' | 'denied'): Promise<void> => {
      const r = await cli(n, socket, ['policy', 'trace', '--src', from, '--src', ns, '--dst', to, '--dst', ns, '--dport', dport]);
      const got = /Verdict:\s+(ALLOWED|DENIED)/.exec(r.stdout)?.[1]?.toLowerCase();
      if (got !== expect) throw new Error(`expected ${expect} for ${from} -> ${to}:${dport}, got ${got ?? r.stdout + r.stderr}`);
    };

    n.step('No policy yet: every pod may reach every other pod');
    await trace('k8s:app=client', 'k8s:app=server', '80/TCP', 'allowed');
    await trace('k8s:app=stranger', 'k8s:app=server', '80/TCP', 'allowed');

    n.step('Import a policy: only app=client may reach app=server, on 80/TCP');
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, DEMO_POLICY);
    n.say(DEMO_POLICY.split('\n').join('\n    '));
    await cli(n, socket, ['policy', 'import', file, '--wait']);
    await trace('k8s:app=client', 'k8s:app=server', '80/TCP', 'allowed');
    await trace('k8s:app=client', 'k8s:app=server', '81/TCP', 'denied');
    await trace('k8s:app=stranger', 'k8s:app=server', '80/TCP', 'denied');

    n.step('Delete the policy: connectivity is back');
    await cli(n, socket, ['policy', 'delete', '--all']);
    await trace('k8s:app=stranger', 'k8s:app=server', '80/TCP', 'allowed');

    n.step('Clean up: delete the endpoints and stop the agent');
    for (const p of PODS) await cli(n, socket, ['endpoint', 'delete', `container-id:demo-${p.name}`]);
  } finally {
    client.close();
    await stopAgent(n, agent);
    rmSync(dir, { recursive: true, force: true });
  }
}
