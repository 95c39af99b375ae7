/**
 * The bench's own share of a create rate: the same client and requests against a server (a process
 * of its own) that answers every request at once with a canned body, so what is measured is how
 * fast the client can ask and what each request costs it, without the agent.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CelliumClient } from '../../src/api/client.js';
import { scratchBase } from './agent-process.js';

/** What the client alone reached. */
export interface ClientAlone {
  readonly n: number;
  readonly ms: number;
  /** The bench process's CPU (user + system) per request. */
  readonly clientCpuMs: number;
}

// a plain node:http server on a unix socket: reads each body, answers 201 with the canned JSON
const SERVER = `
const http = require('node:http');
const [socket, body] = process.argv.slice(1);
http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { res.writeHead(201, { 'content-type': 'application/json' }); res.end(body); });
}).listen(socket, () => process.stdout.write('ready\\n'));
`;

/**
 * Sends `requests` (PUT /endpoint/0 each) with `inFlight` at once to a server answering `canned`
 * (e.g. an agent's answer to one of them); resolves with the wall time and the client's CPU.
 */
export async function clientAlone<T>(requests: readonly T[], inFlight: number, canned: string): Promise<ClientAlone> {
  const dir = mkdtempSync(join(scratchBase(), 'cellium-bench-client-'));
  const socketPath = join(dir, 'canned.sock');
  const server = spawn(process.execPath, ['-e', SERVER, socketPath, canned], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await once(server.stdout!, 'data');
    const client = new CelliumClient({ socketPath });
    let next = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < requests.length; i = next++) await client.createEndpoint(0, requests[i] as never);
    }));
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { n: requests.length, ms, clientCpuMs: requests.length ? (cpu.user + cpu.system) / 1000 / requests.length : 0 };
  } finally {
    server.kill('SIGTERM');
    if (server.exitCode === null && server.signalCode === null) await once(server, 'exit');
    rmSync(dir, { recursive: true, force: true });
  }
}
