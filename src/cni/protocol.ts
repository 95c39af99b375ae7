/**
 * The wire contract between the `cellium-cni` shim (cni-shim/, C) and the agent's CNI server.
 *
 * The shim answers VERSION itself. For ADD, DEL, CHECK, STATUS and GC it sends one
 * `POST /v1/cellium/cni` (HTTP/1.1, `Connection: close`) on the agent's unix socket with a JSON
 * {@link CniRequest} body. The agent answers `200` with the exact text the shim prints on stdout as
 * the body, and the shim's exit code in the `X-Cellium-Cni-Exit-Code` header (0–255). Code 11 ("try
 * again later") means the agent did not answer: unreachable socket, no complete answer in time, or
 * `503` / `429` (not ready, busy; a DEL is then queued on 503 as on an unreachable socket). An
 * answer the agent did give is a permanent error: `413` is code 7 "network configuration too large:
 * N bytes, limit M" (M from the `X-Cellium-Max-Body-Bytes` header), any other status, a missing
 * exit-code header or a malformed answer code 5 with the agent's message ({@link decodeCniResponse}).
 * A DEL the shim could not deliver is stored as a file `<unix-ns>-<pid>-<container id>.json` in the
 * delete queue directory, holding the same {@link CniRequest} JSON; the agent replays them at start.
 * docs/cni.md has the whole story.
 */
import { request as httpRequest, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { Ajv } from 'ajv';

/** The HTTP path the shim posts to on the agent's socket. */
export const CNI_REQUEST_PATH = '/v1/cellium/cni';
/** The response header carrying the shim's exit code. */
export const CNI_EXIT_CODE_HEADER = 'X-Cellium-Cni-Exit-Code';
/** The header of a `413` answer carrying the agent's request body limit (--api-max-body-bytes). */
export const MAX_BODY_HEADER = 'X-Cellium-Max-Body-Bytes';
/** The agent socket used when the netconf has no top-level `socket-path` key. */
export const DEFAULT_CNI_SOCKET_PATH = '/var/run/cellium/cellium.sock';
/** Where the shim queues a DEL it could not deliver. */
export const DEFAULT_DELETE_QUEUE_DIR = '/var/run/cellium/delete-queue';
/** Environment variable overriding the delete queue directory (used by tests). */
export const DELETE_QUEUE_ENV = 'CELLIUM_CNI_DELETE_QUEUE';
/** CNI spec versions the shim accepts, oldest first. */
export const SUPPORTED_CNI_VERSIONS = ['0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;

/** One of {@link SUPPORTED_CNI_VERSIONS}. */
export type CniVersion = (typeof SUPPORTED_CNI_VERSIONS)[number];
/** The commands the shim forwards (VERSION never reaches the agent). */
export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC';

/**
 * CNI error codes (1–99 are reserved by the spec; 11 means "try again later"). The spec's code 4
 * ("invalid necessary environment variables") is not used: Cellium reports an invalid variable
 * with 7, like an invalid network configuration (the spec's 7), the message naming the variable or
 * the key (docs/cni.md, "Error codes").
 */
export const CniErrorCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  /** The spec's "invalid network config". */
  InvalidConfig: 7,
  IoFailure: 5,
  DecodingFailure: 6,
  /** An invalid CNI_* variable (the spec lists 4; Cellium reports 7, see above). */
  InvalidEnv: 7,
  TryAgainLater: 11,
  PluginNotAvailable: 50,
  LimitedConnectivity: 51,
} as const;

/**
 * The request body. Every field is a string; an environment variable the runtime did not set is "".
 * `stdin` is the raw network configuration text as the runtime wrote it (already checked by the shim
 * to be a JSON object with a supported `cniVersion`, a `name` and a `type`).
 */
export interface CniRequest {
  /** CNI_COMMAND. */
  command: CniCommand;
  /** CNI_CONTAINERID ("" for STATUS and GC). */
  containerId: string;
  /** CNI_NETNS: a path such as /var/run/netns/x or /proc/PID/ns/net ("" when unset, e.g. on DEL). */
  netns: string;
  /** CNI_IFNAME: the interface name inside the container. */
  ifName: string;
  /** CNI_ARGS: `K=V;K=V` pairs, see {@link parseCniArgs}. */
  args: string;
  /** CNI_PATH: colon-separated plugin directories. */
  path: string;
  /** The network configuration JSON text (stdin of the shim). */
  stdin: string;
}

/** What the agent answers: `body` is printed on stdout verbatim, the shim exits with `exitCode`. */
export interface CniResponse {
  exitCode: number;
  body: string;
}

/** The CNI error result printed on stdout when a command fails. */
export interface CniErrorResult {
  cniVersion: string;
  code: number;
  msg: string;
  details: string;
}

/** A request or response that breaks the contract; `cniCode` is the CNI code to report it with. */
export class CniProtocolError extends Error {
  /** @param cniCode CNI error code that describes the problem. */
  constructor(
    message: string,
    readonly cniCode: number = CniErrorCode.DecodingFailure,
  ) {
    super(message);
    this.name = 'CniProtocolError';
  }
}

const requestSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['command', 'containerId', 'netns', 'ifName', 'args', 'path', 'stdin'],
  properties: {
    command: { enum: ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC'] },
    containerId: { type: 'string' },
    netns: { type: 'string' },
    ifName: { type: 'string' },
    args: { type: 'string' },
    path: { type: 'string' },
    stdin: { type: 'string' },
  },
} as const;

const validateRequest = new Ajv({ allErrors: true }).compile<CniRequest>(requestSchema);

/** Decodes a request body (or a delete-queue file); throws {@link CniProtocolError} when malformed. */
export function decodeCniRequest(text: string | Buffer): CniRequest {
  let value: unknown;
  try {
    value = JSON.parse(text.toString());
  } catch (err) {
    throw new CniProtocolError(`CNI request is not JSON: ${(err as Error).message}`);
  }
  if (!validateRequest(value)) {
    const why = (validateRequest.errors ?? [])
      .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
      .join('; ');
    throw new CniProtocolError(`CNI request does not match the contract: ${why}`);
  }
  return value;
}

/** Encodes a request body exactly as the shim does (used by tests and benchmarks). */
export function encodeCniRequest(req: CniRequest): string {
  const { command, containerId, netns, ifName, args, path, stdin } = req;
  return JSON.stringify({ command, containerId, netns, ifName, args, path, stdin });
}

/** The cniVersion to echo in a reply: the requested one when supported, else the newest. */
export function replyCniVersion(requested: unknown): CniVersion {
  const found = SUPPORTED_CNI_VERSIONS.find((v) => v === requested);
  return found ?? SUPPORTED_CNI_VERSIONS[SUPPORTED_CNI_VERSIONS.length - 1];
}

/** A successful answer printing `result` (a CNI result object) as JSON; exit code 0. */
export function cniSuccess(result: object): CniResponse {
  return { exitCode: 0, body: `${JSON.stringify(result)}\n` };
}

/** A successful answer with no output (DEL, CHECK, STATUS, GC); exit code 0. */
export function cniEmptySuccess(): CniResponse {
  return { exitCode: 0, body: '' };
}

/** A failed answer printing the CNI error result; exit code 1. */
export function cniError(cniVersion: string, code: number, msg: string, details = ''): CniResponse {
  const error: CniErrorResult = { cniVersion, code, msg, details };
  return { exitCode: 1, body: `${JSON.stringify(error)}\n` };
}

/** Writes a {@link CniResponse} on a node:http (or Express) response: status 200 plus the header. */
export function writeCniResponse(res: ServerResponse, resp: CniResponse): void {
  if (!Number.isInteger(resp.exitCode) || resp.exitCode < 0 || resp.exitCode > 255) {
    throw new CniProtocolError(`exit code ${resp.exitCode} is not an integer in 0..255`);
  }
  const body = Buffer.from(resp.body);
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': String(body.length),
    [CNI_EXIT_CODE_HEADER]: String(resp.exitCode),
  });
  res.end(body);
}

/** The agent's message in an error answer: the JSON string body Cellium's API sends, else the text. */
function agentMessage(body: string): string {
  try {
    const v: unknown = JSON.parse(body);
    if (typeof v === 'string') return v;
  } catch {
    // not JSON: the text as it is
  }
  return body.slice(0, 300);
}

/**
 * Reads the agent's answer as the shim does; throws {@link CniProtocolError} when it is not a CNI
 * answer, with the code the shim prints: 11 for 503 and 429 (the agent asks to try again), 7 for
 * 413 (`requestBytes`: the size of the request that was refused), 5 for any other status or a
 * missing exit-code header.
 */
export function decodeCniResponse(status: number, headers: IncomingHttpHeaders, body: string, requestBytes?: number): CniResponse {
  if (status === 503 || status === 429) throw new CniProtocolError(`agent answered HTTP ${status}: ${agentMessage(body)}`, CniErrorCode.TryAgainLater);
  if (status === 413) {
    const limit = headers[MAX_BODY_HEADER.toLowerCase()];
    throw new CniProtocolError(`network configuration too large: ${requestBytes ?? 'unknown'} bytes, limit ${typeof limit === 'string' ? limit : 'unknown'}`, CniErrorCode.InvalidConfig);
  }
  if (status !== 200) throw new CniProtocolError(`agent answered HTTP ${status}: ${agentMessage(body)}`, CniErrorCode.IoFailure);
  const raw = headers[CNI_EXIT_CODE_HEADER.toLowerCase()];
  const exitCode = typeof raw === 'string' && /^\d{1,3}$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!(exitCode >= 0 && exitCode <= 255)) {
    throw new CniProtocolError(`agent answer lacks a valid ${CNI_EXIT_CODE_HEADER}`, CniErrorCode.IoFailure);
  }
  return { exitCode, body };
}

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One POST of the contract; with `payload` undefined only the headers (announcing `length` bytes) are sent. */
function exchange(socketPath: string, length: number, payload: Buffer | undefined, timeoutMs: number): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const call = httpRequest(
      {
        socketPath,
        path: CNI_REQUEST_PATH,
        method: 'POST',
        timeout: timeoutMs,
        headers: { 'Content-Type': 'application/json', 'Content-Length': length, Connection: 'close' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      },
    );
    call.on('timeout', () => call.destroy(new CniProtocolError(`no answer from ${socketPath} within ${timeoutMs} ms`, CniErrorCode.TryAgainLater)));
    call.on('error', reject);
    if (payload) call.end(payload);
    else call.flushHeaders();
  });
}

/**
 * Sends one request to an agent socket the way the shim does and returns its decoded answer. An
 * agent that answers before reading the whole body (413) and closes makes the write fail (EPIPE);
 * its answer is then heard by sending the headers alone, which it judges the same way (the body is
 * never sent, so nothing runs; any other outcome rejects with the first error).
 */
export async function sendCniRequest(socketPath: string, req: CniRequest, timeoutMs = 300_000): Promise<CniResponse> {
  const payload = Buffer.from(encodeCniRequest(req));
  let answer: RawAnswer;
  try {
    answer = await exchange(socketPath, payload.length, payload, timeoutMs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPIPE' && code !== 'ECONNRESET') throw err;
    answer = await exchange(socketPath, payload.length, undefined, Math.min(timeoutMs, 5_000)).catch(() => Promise.reject(err));
    if (answer.status !== 413) throw err;
  }
  return decodeCniResponse(answer.status, answer.headers, answer.body, payload.length);
}

/**
 * Parses CNI_ARGS (`K=V;K=V`, e.g. `IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p`) into a
 * map, keeping the order (empty pairs are skipped); throws {@link CniProtocolError} (code 7,
 * invalid env) on a pair that is not exactly one non-empty key, one `=` and a value (libcni's rule).
 */
export function parseCniArgs(args: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of args.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0 || pair.indexOf('=', eq + 1) >= 0) {
      throw new CniProtocolError(`CNI_ARGS pair ${JSON.stringify(pair.slice(0, 64))} is not KEY=VALUE`, CniErrorCode.InvalidEnv);
    }
    out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return out;
}
