// Helpers for the shim tests: build bin/cellium-cni once, run it like a container runtime would,
// and a fake agent (node:http on a temporary unix socket) that records what the shim sent.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The repository root. */
export const ROOT = resolve(import.meta.dirname, '..', '..');
/** The built shim. */
export const SHIM = join(ROOT, 'bin', 'cellium-cni');

/** Builds the shim (a no-op when it is up to date). */
export function buildShim(): void {
  execFileSync('bash', [join(ROOT, 'scripts/build.d/40-cni-shim.sh')], { stdio: 'inherit' });
}

/** What one run of the shim produced. */
export interface ShimRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the shim with exactly these variables (plus PATH) and this stdin. */
export function runShim(env: Record<string, string>, stdin: string): Promise<ShimRun> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(SHIM, [], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
  });
}

/** A temporary directory removed by the returned cleanup function. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Leaves a unix socket file nobody listens on: a child listens on it and is killed with SIGKILL. */
export async function leaveStaleSocket(socketPath: string): Promise<void> {
  const script = `require('node:net').createServer().listen(${JSON.stringify(socketPath)}, () => console.log('up'))`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((ok, fail) => {
    child.stdout.once('data', () => ok());
    child.once('exit', (code) => fail(new Error(`listener exited early (${code})`)));
  });
  const exited = new Promise((ok) => child.once('exit', ok));
  child.kill('SIGKILL');
  await exited;
}

/** A request the fake agent received. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A fake agent listening on a unix socket; `handler` answers each request. */
export interface FakeAgent {
  socketPath: string;
  seen: SeenRequest[];
  close: () => Promise<void>;
}

/** Starts a fake agent on socketPath. */
export async function startFakeAgent(
  socketPath: string,
  handler: (req: SeenRequest, res: ServerResponse) => void,
): Promise<FakeAgent> {
  const seen: SeenRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() };
      seen.push(got);
      handler(got, res);
    });
  });
  await new Promise<void>((ok) => server.listen(socketPath, ok));
  return {
    socketPath,
    seen,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
