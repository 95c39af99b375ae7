/**
 * The Hubble gRPC server on its unix socket (Cilium's hubble.sock): the observer.Observer service
 * (GetFlows, ServerStatus, GetNodes) and gRPC's health service, which `hubble status` asks first.
 * The socket is prepared like the API's (a stale one replaced, a live one refused), mode 0660.
 */
import { Server, ServerCredentials, status as grpcStatus, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream } from '@grpc/grpc-js';
import { FlowFilterError, LabelSelectorError, healthpb, observerpb, relaypb } from '../../hubble/index.js';
import type { Logger } from '../../hive/logger.js';
import { prepareSocket, removeSocket, restrictSocket } from '../api-server/index.js';
import { GetFlowsRequestError, HubbleSocketError } from './errors.js';
import { checkRequest, serveGetFlows, type GetFlowsCall } from './get-flows.js';
import type { HubbleObserver } from './observer.js';

/**
 * observer.Observer as generated, except that GetFlows' serializer passes a Buffer through: a
 * follower writes each flow's response encoded once for all followers (flowResponseBytes).
 */
const OBSERVER_SERVICE = {
  ...observerpb.ObserverService,
  getFlows: {
    ...observerpb.ObserverService.getFlows,
    responseSerialize: (v: observerpb.GetFlowsResponse | Buffer): Buffer => (Buffer.isBuffer(v) ? v : observerpb.ObserverService.getFlows.responseSerialize(v)),
  },
};

/** The names `hubble status` and gRPC health clients ask about: all, Hubble's, and the service's. */
export const HEALTH_SERVICES: readonly string[] = ['', 'hubble.server.Observer', 'observer.Observer'];

/** Serves the observer on a unix socket from start to stop. */
export class HubbleServer {
  private server?: Server;

  constructor(
    private readonly observer: HubbleObserver,
    readonly socketPath: string,
    private readonly version: string,
    private readonly log: Logger,
  ) {}

  /** Prepares the socket and listens; throws HubbleSocketError naming the path. */
  async start(): Promise<void> {
    try {
      await prepareSocket(this.socketPath);
    } catch (err) {
      throw new HubbleSocketError(this.socketPath, (err as Error).message);
    }
    const server = new Server();
    server.addService(OBSERVER_SERVICE, this.observerImpl());
    server.addService(healthpb.HealthService, { check: (call: ServerUnaryCall<healthpb.HealthCheckRequest, healthpb.HealthCheckResponse>, cb: sendUnaryData<healthpb.HealthCheckResponse>) => this.health(call, cb) });
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix:${this.socketPath}`, ServerCredentials.createInsecure(), (err) => (err ? reject(new HubbleSocketError(this.socketPath, err.message)) : resolve()));
    });
    restrictSocket(this.socketPath);
    this.server = server;
    this.log.info({ socket: this.socketPath, capacity: this.observer.ring.capacity }, 'Hubble server listening');
  }

  /** Stops: open streams end (the observer completes them), then the server closes. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 2000);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    removeSocket(this.socketPath);
  }

  /** The status a ServerStatus call answers. */
  status(): observerpb.ServerStatusResponse {
    const s = this.observer.stats();
    return {
      numFlows: s.numFlows, maxFlows: s.maxFlows, seenFlows: s.seenFlows, uptimeNs: s.uptimeNs,
      numConnectedNodes: 1, numUnavailableNodes: 0, unavailableNodes: [], version: this.version, flowsRate: s.flowsRate,
    };
  }

  /** This node as GetNodes lists it. */
  node(): observerpb.Node {
    const s = this.observer.stats();
    return {
      name: this.observer.nodeName, version: this.version, address: `unix://${this.socketPath}`, state: relaypb.NodeState.NODE_CONNECTED,
      tls: { enabled: false, serverName: '' }, uptimeNs: s.uptimeNs, numFlows: s.numFlows, maxFlows: s.maxFlows, seenFlows: s.seenFlows,
    };
  }

  private observerImpl(): observerpb.ObserverServer {
    return {
      getFlows: (call: ServerWritableStream<observerpb.GetFlowsRequest, observerpb.GetFlowsResponse>) => {
        try {
          checkRequest(call.request);
          // the service's serializer takes encoded responses too (OBSERVER_SERVICE)
          serveGetFlows(call as unknown as GetFlowsCall, this.observer);
        } catch (err) {
          const bad = err instanceof GetFlowsRequestError || err instanceof FlowFilterError || err instanceof LabelSelectorError;
          call.destroy(Object.assign(new Error((err as Error).message), { code: bad ? grpcStatus.INVALID_ARGUMENT : grpcStatus.INTERNAL, details: (err as Error).message }));
        }
      },
      getNodes: (_call, cb) => cb(null, { nodes: [this.node()] }),
      serverStatus: (_call, cb) => cb(null, this.status()),
    };
  }

  private health(call: ServerUnaryCall<healthpb.HealthCheckRequest, healthpb.HealthCheckResponse>, cb: sendUnaryData<healthpb.HealthCheckResponse>): void {
    if (!HEALTH_SERVICES.includes(call.request.service)) {
      cb({ code: grpcStatus.NOT_FOUND, details: `unknown service ${JSON.stringify(call.request.service)}: ask about ${HEALTH_SERVICES.filter(Boolean).join(' or ')}` });
      return;
    }
    cb(null, { status: this.server ? healthpb.HealthCheckResponse_ServingStatus.SERVING : healthpb.HealthCheckResponse_ServingStatus.NOT_SERVING });
  }
}
