/**
 * Where `cellium explain` finds a flow it is not given: the agent's Hubble Observer API (the
 * `hubble observe` socket, the agent's --enable-hubble and --hubble-socket-path), asked for the
 * last dropped flow between two pods or addresses, to a service, or by its uuid.
 */
import { isIP } from 'node:net';
import { dirname, join } from 'node:path';
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { flowpb, observerpb } from '../../hubble/index.js';
import { CliFailure, UsageError } from '../errors.js';

/** What to look for in the agent's flows. */
export interface FlowQuery {
  readonly from?: string;
  readonly to?: string;
  readonly toService?: string;
  readonly flowId?: string;
}

/** The most dropped flows read to find the last one of exact pods (Hubble's pod filter is a prefix). */
const SCAN = 4095;

/** `unix://PATH` of --hubble-server, or the default beside the API socket (the agent's own default). */
export function hubbleAddress(server: string | undefined, apiSocket: string): string {
  const s = server ?? `unix://${join(dirname(apiSocket), 'hubble.sock')}`;
  if (s.startsWith('unix://')) return `unix:${s.slice('unix://'.length)}`;
  if (s.startsWith('/')) return `unix:${s}`;
  throw new UsageError(`--hubble-server "${s}" is not a unix socket: give unix:///PATH or /PATH (the agent's --hubble-socket-path)`);
}

/** A pod (`ns/name`, `name` in `default`) or an address, as --from/--to give it. */
function peer(v: string, flag: string): { ip: string } | { pod: string } {
  if (isIP(v)) return { ip: v };
  if (/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$/.test(v)) return { pod: v.includes('/') ? v : `default/${v}` };
  throw new UsageError(`${flag} "${v}" is neither a pod (NAMESPACE/NAME, or NAME in default) nor an IP address`);
}

/** The Hubble filter of a query, and the exact check of a flow against it (pods are prefixes in Hubble). */
export function flowFilter(q: FlowQuery): { filter: flowpb.FlowFilter; exact: (f: flowpb.Flow) => boolean } {
  const filter: flowpb.FlowFilter = { ...flowpb.FlowFilter.decode(new Uint8Array()), verdict: [flowpb.Verdict.DROPPED] };
  const checks: ((f: flowpb.Flow) => boolean)[] = [];
  const podOf = (e: flowpb.Endpoint | undefined) => (e ? `${e.namespace}/${e.podName}` : '');
  if (q.flowId) filter.uuid = [q.flowId];
  if (q.from) {
    const p = peer(q.from, '--from');
    if ('ip' in p) filter.sourceIp = [p.ip];
    else {
      filter.sourcePod = [p.pod];
      checks.push((f) => podOf(f.source) === p.pod);
    }
  }
  if (q.to) {
    const p = peer(q.to, '--to');
    if ('ip' in p) filter.destinationIp = [p.ip];
    else {
      filter.destinationPod = [p.pod];
      checks.push((f) => podOf(f.destination) === p.pod);
    }
  }
  if (q.toService) {
    if (!/^[^/\s]+\/[^/\s]+$/.test(q.toService)) throw new UsageError(`--to-service "${q.toService}" is not NAMESPACE/NAME`);
    filter.destinationService = [q.toService];
  }
  return { filter, exact: (f) => checks.every((c) => c(f)) };
}

/** The last dropped flow matching `q` in the agent's Hubble ring; throws CliFailure when there is none. */
export async function lastDroppedFlow(address: string, q: FlowQuery, timeoutMs: number): Promise<flowpb.Flow> {
  const { filter, exact } = flowFilter(q);
  const client = new observerpb.ObserverClient(address, credentials.createInsecure());
  const flows: flowpb.Flow[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const call = client.getFlows({ ...observerpb.GetFlowsRequest.decode(new Uint8Array()), number: SCAN, whitelist: [filter] }, { deadline: Date.now() + timeoutMs });
      call.on('data', (r: observerpb.GetFlowsResponse) => {
        if (r.flow && exact(r.flow)) flows.push(r.flow);
      });
      call.on('error', (e: ServiceError) => reject(e));
      call.on('end', () => resolve());
    });
  } catch (err) {
    const e = err as ServiceError;
    const where = address.replace(/^unix:/, 'unix://');
    if (e.code === 14) throw new CliFailure(`cannot reach Hubble at ${where} (${e.details}); start the agent with --enable-hubble, or give its --hubble-socket-path with --hubble-server`);
    throw new CliFailure(`Hubble at ${where} refused the request: ${e.details ?? e.message}`);
  } finally {
    client.close();
  }
  const last = flows[flows.length - 1];
  if (!last) {
    const what = q.flowId ? `no dropped flow has the uuid ${q.flowId}` : `no dropped flow${q.from ? ` from ${q.from}` : ''}${q.to ? ` to ${q.to}` : ''}${q.toService ? ` to service ${q.toService}` : ''}`;
    throw new CliFailure(`${what} in the agent's Hubble ring (the last ${SCAN} drops); check with hubble observe --verdict DROPPED, or give the flow's JSON`);
  }
  return last;
}
