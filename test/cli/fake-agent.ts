/**
 * A fake agent for the CLI tests: node:http on a temp unix socket, answering canned bodies per
 * operation of api/openapi.yaml. Every request is validated against the spec like the real agent
 * does (400 ValidationError when it does not match), and every canned answer is validated before
 * it is served (an invalid one is a test bug: recorded in `problems`, answered 500).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSpecValidator, type ValidRequest } from '../../src/api/spec.js';
import { checkHttpRequest } from '../../src/api/http-check.js';
import { runCli } from '../../src/cli/main.js';
import type { CliIO } from '../../src/cli/context.js';
import { readFile } from 'node:fs/promises';

const validator = createSpecValidator();

/** What a handler answers. */
export interface FakeReply {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A request the fake received (valid or not). */
export interface Received {
  readonly operationId: string;
  readonly method: string;
  readonly url: string;
  readonly request?: ValidRequest;
  readonly rejected?: string;
}

/** A canned reply, or a function of the validated request. */
export type FakeHandler = FakeReply | ((req: ValidRequest, n: number) => FakeReply);

/** The running fake. */
export interface FakeAgent {
  readonly socketPath: string;
  readonly received: Received[];
  /** Canned answers that did not match the spec, and requests no handler was given for. */
  readonly problems: string[];
  /** The valid requests of one operation. */
  requests(operationId: string): ValidRequest[];
}

/** Minimal view of a tap test. */
interface TestLike {
  teardown(fn: () => void | Promise<void>): void;
}

/** Starts a fake agent answering with `handlers` (by operationId); stops it at teardown. */
export async function startFakeAgent(t: TestLike, handlers: Readonly<Record<string, FakeHandler>>): Promise<FakeAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cli-'));
  const socketPath = join(dir, 'agent.sock');
  const received: Received[] = [];
  const problems: string[] = [];
  const counts = new Map<string, number>();
  const send = (res: ServerResponse, reply: FakeReply): void => {
    const headers: Record<string, string> = { ...reply.headers };
    let payload = '';
    if (reply.body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(reply.body);
    }
    res.writeHead(reply.status, headers).end(payload);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const type = (req.headers['content-type'] ?? '').split(';')[0]!;
      let body: unknown = text === '' ? undefined : text;
      if (type === 'application/json' && text !== '') body = JSON.parse(text);
      const checked = checkHttpRequest(validator, { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body });
      if (!checked.ok) {
        if (checked.operation) received.push({ operationId: checked.operation.operationId, method: req.method ?? '', url: req.url ?? '', rejected: JSON.stringify(checked.body) });
        else problems.push(`no operation for ${req.method} ${req.url}`);
        return send(res, { status: checked.status, body: checked.body, ...(checked.allow ? { headers: { allow: checked.allow } } : {}) });
      }
      const operationId = checked.operation.operationId;
      received.push({ operationId, method: req.method ?? '', url: req.url ?? '', request: checked.request });
      const handler = handlers[operationId];
      if (!handler) {
        problems.push(`no fake handler for ${operationId}`);
        return send(res, { status: 500, body: `no fake handler for ${operationId}` });
      }
      const n = (counts.get(operationId) ?? 0) + 1;
      counts.set(operationId, n);
      const reply = typeof handler === 'function' ? handler(checked.request, n) : handler;
      const wrong = validator.response(operationId, reply.status, reply.body, reply.headers ?? {});
      if (wrong.length) {
        problems.push(`canned ${operationId} ${reply.status} does not match the spec: ${wrong.map((w) => w.message).join('; ')}`);
        return send(res, { status: 500, body: 'invalid canned answer' });
      }
      send(res, reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    socketPath,
    received,
    problems,
    requests: (id) => received.filter((r) => r.operationId === id && r.request).map((r) => r.request!),
  };
}

/** What one CLI run printed and returned. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI in-process against a socket, capturing its output. */
export async function cli(socketPath: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: (s) => void (stdout += s),
    stderr: (s) => void (stderr += s),
    readFile: (p) => readFile(p, 'utf8'),
    env,
  };
  const code = await runCli(['--socket-path', socketPath, ...args], io);
  return { code, stdout, stderr };
}
