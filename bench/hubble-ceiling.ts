/**
 * The hubble bench's ceiling servers (bench/hubble.bench.ts): a GetFlows server that does no flow
 * work at all. It is handed the GetFlowsResponse bytes the agent sends for the bench's records,
 * encoded once before the round, and replays them to one follower as fast as the follower takes
 * them, on a unix socket as the agent's server listens. What a client receives from it a second is
 * the most that client can take whatever the agent does. Two transports: grpc-js as the agent's
 * HubbleServer uses it (the project's patched batched writes, the same queue before waiting for
 * the drain as GetFlows), and a minimal raw node:http2 server writing length-prefixed gRPC
 * messages already framed, 256 to a write, so grpc-js is not what caps the row.
 */
import { createServer, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { rmSync } from 'node:fs';
import { Server, ServerCredentials, type ServerWritableStream } from '@grpc/grpc-js';

/** Responses a call may hold queued before it waits for the drain, as the agent's GetFlows (FOLLOW_QUEUE). */
const QUEUE = 256;

const GET_FLOWS = '/observer.Observer/GetFlows';

/** Which server replays the responses. */
export type CeilingTransport = 'grpc-js' | 'http2';

/** A ceiling server listening on its socket. */
export interface CeilingServer {
  /** Resolves when a follower's GetFlows call came and was sent its first response. */
  readonly connected: Promise<void>;
  /** Replays the responses, all of them `passes` times, to the follower as fast as it takes them. */
  replay(passes: number): void;
  stop(): Promise<void>;
}

/** A one-shot signal with a value (the follower's stream waits on it after the first response). */
function signal<T>(): { wait: Promise<T>; open: (v: T) => void } {
  let open!: (v: T) => void;
  const wait = new Promise<T>((r) => (open = r));
  return { wait, open };
}

/** Starts a ceiling server on `socket` replaying `responses` (encoded GetFlowsResponse messages). */
export async function startCeiling(transport: CeilingTransport, socket: string, responses: readonly Buffer[]): Promise<CeilingServer> {
  rmSync(socket, { force: true });
  return transport === 'grpc-js' ? grpcCeiling(socket, responses) : http2Ceiling(socket, responses);
}

async function grpcCeiling(socket: string, responses: readonly Buffer[]): Promise<CeilingServer> {
  const g = signal<number>();
  const connected = signal<void>();
  const pass = (b: Buffer): Buffer => b;
  const service = { getFlows: { path: GET_FLOWS, requestStream: false, responseStream: true, requestSerialize: pass, requestDeserialize: pass, responseSerialize: pass, responseDeserialize: pass, originalName: 'getFlows' } };
  const server = new Server();
  server.addService(service, {
    getFlows: (call: ServerWritableStream<Buffer, Buffer>) => {
      let ended = false;
      const stop = (): void => void (ended = true);
      call.on('cancelled', stop);
      call.on('close', stop);
      call.on('error', stop);
      call.write(responses[0]!);
      connected.open();
      void g.wait.then((passes) => {
        const count = passes * responses.length;
        let i = 0;
        // as GetFlows writes: until QUEUE responses wait in the stream, then on the drain
        const pump = (): void => {
          while (!ended && i < count) if (!call.write(responses[i++ % responses.length]!) && call.writableLength >= QUEUE) return;
        };
        call.on('drain', pump);
        pump();
      });
    },
  });
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix:${socket}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return {
    connected: connected.wait,
    replay: (passes) => g.open(passes),
    stop: async () => {
      server.forceShutdown();
      rmSync(socket, { force: true });
    },
  };
}

/** gRPC's length prefix (not compressed, 4-byte big-endian length) before each message, `QUEUE` messages to a buffer. */
function framed(responses: readonly Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < responses.length; i += QUEUE) {
    const batch = responses.slice(i, i + QUEUE);
    const b = Buffer.allocUnsafe(batch.reduce((n, m) => n + 5 + m.length, 0));
    let off = 0;
    for (const m of batch) {
      b[off] = 0;
      b.writeUInt32BE(m.length, off + 1);
      m.copy(b, off + 5);
      off += 5 + m.length;
    }
    out.push(b);
  }
  return out;
}

async function http2Ceiling(socket: string, responses: readonly Buffer[]): Promise<CeilingServer> {
  const g = signal<number>();
  const connected = signal<void>();
  // all of it framed before the round: a pass writes these buffers of QUEUE messages (the last one fewer)
  const chunks = framed(responses);
  const first = framed(responses.slice(0, 1))[0]!;
  const sessions = new Set<Http2Session>();
  const server = createServer();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    stream.on('error', () => undefined);
    stream.resume(); // the request message: read and dropped
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers(headers[':path'] === GET_FLOWS ? { 'grpc-status': '0' } : { 'grpc-status': '12', 'grpc-message': `${headers[':path']} is not served here` }));
    if (headers[':path'] !== GET_FLOWS) {
      stream.end();
      return;
    }
    stream.write(first);
    connected.open();
    void g.wait.then((passes) => {
      const writes = passes * chunks.length;
      let i = 0;
      const pump = (): void => {
        while (!stream.destroyed && i < writes) {
          if (!stream.write(chunks[i++ % chunks.length]!)) {
            stream.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  return {
    connected: connected.wait,
    replay: (passes) => g.open(passes),
    stop: async () => {
      for (const s of sessions) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(socket, { force: true });
    },
  };
}
