/** Errors of the loadbalancer cell: each names the field and the fix. */
import { dirname } from 'node:path';
import { ConfigError } from '../../hive/errors.js';

/**
 * What went wrong: an invalid frontend (API 460), an invalid backend (461), other invalid input
 * (400), an unknown service (404), the service store (500).
 */
export type LBErrorCode = 'invalid-frontend' | 'invalid-backend' | 'invalid' | 'not-found' | 'store';

/** A load-balancing error. `field` is a JSON pointer into the input when one field is at fault. */
export class LBError extends Error {
  override readonly name = 'LBError';
  constructor(
    readonly code: LBErrorCode,
    readonly field: string,
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`${field ? `${field}: ` : ''}${problem}; fix: ${fix}`);
  }
}

/** A frontend field that cannot be used. */
export function invalidFrontend(field: string, problem: string, fix: string): LBError {
  return new LBError('invalid-frontend', field, problem, fix);
}

/** A backend field that cannot be used. */
export function invalidBackend(field: string, problem: string, fix: string): LBError {
  return new LBError('invalid-backend', field, problem, fix);
}

/** Any other field (flags, a manifest's field) that cannot be used. */
export function invalidField(field: string, problem: string, fix: string): LBError {
  return new LBError('invalid', field, problem, fix);
}

/** A frontend of a type other than NodePort on one of the node's own addresses (`why` says whose). */
export function nodeAddressFrontend(field: string, ip: string, type: string, why: string): LBError {
  return invalidFrontend(field, `${ip} cannot be a service frontend of type ${type}: ${why}; socket load balancing would send every host process's connect to it to the service's backends`, 'give the service a cluster IP from the service CIDR (such as 10.96.0.10); the node\'s own addresses are served only by NodePort services (a port of --node-port-range)');
}

/** A HostPort frontend from a source other than a pod's spec (Cellium derives none). */
export function hostPortRefused(field: string): LBError {
  return invalidFrontend(field, 'type HostPort is refused: a HostPort frontend comes from a pod\'s spec.containers[].ports[].hostPort, which Cellium does not derive, and would take a port of the node that a host process may listen on', 'give the service type NodePort (a port of --node-port-range) or ClusterIP');
}

/** The node's addresses could not be listed or watched at start: the agent does not start (services could take them). */
export function nodeAddressesUnknown(err: unknown): LBError {
  return new LBError('store', '', `the node's own addresses cannot be listed or watched over rtnetlink (${(err as Error).message}); the agent does not start without them, since a service could then take one of them`, 'run the agent where it can open NETLINK_ROUTE sockets in its network namespace, with the netlink addon built (npm run build)');
}

/** A backend that is the agent's own API. */
export function agentBackend(field: string, ip: string, port: number, why: string): LBError {
  return invalidBackend(field, `${ip.includes(':') ? `[${ip}]` : ip}:${port} cannot be a backend: ${why}`, 'give the address of a pod or host that serves the port; the agent\'s API is never a service backend');
}

/** No service with this ID. */
export function serviceNotFound(id: number | string): LBError {
  return new LBError('not-found', '', `service ${id} does not exist`, 'list the services with `cellium service list`');
}

/** A frontend of a Service watched from the apiserver, changed or deleted through the API. */
export function ownedByApiserver(field: string, id: number, serviceKey: string): LBError {
  const [ns, name] = serviceKey.replace(/^apiserver:/, '').split('/');
  return new LBError('invalid', field, `service ${id} is a frontend of the Kubernetes Service ${ns}/${name}, which the agent keeps as the apiserver has it`, `change or delete the Service in Kubernetes (kubectl edit|delete service -n ${ns} ${name}); the API changes only services of its own`);
}

/** Every service ID is taken. */
export function idsExhausted(max: number): LBError {
  return new LBError('invalid-frontend', '', `all ${max} service IDs are in use`, 'delete services that are no longer needed');
}

/** Every backend ID is taken (the backends map is full). */
export function backendIdsExhausted(max: number): LBError {
  return new LBError('invalid-backend', '', `all ${max} backend IDs are in use`, 'raise --bpf-lb-map-max, or remove services or backends that are no longer needed');
}

/** The service store exists but cannot be used: the agent does not start without the services it had. */
export function storeUnreadable(file: string, problem: string): LBError {
  return new LBError(
    'store',
    '',
    `service store ${file} ${problem}; the agent does not start without the services it had`,
    `restore ${file} from a backup, or move it aside (mv ${file} ${file}.bad) to start with no services and import them again`,
  );
}

/** A change could not be made durable. */
export function storeWriteFailed(file: string, problem: string): LBError {
  return new LBError('store', '', `cannot write the service store ${file} (${problem})`, `make ${dirname(file)} writable (free space, permissions) and send the change again`);
}

/** A Maglev table size the BPF datapath cannot read (bpf_lxc is compiled for one size). */
export function maglevSizeUnsupported(size: number, compiled: number): ConfigError {
  return new ConfigError('bpf-lb-maglev-table-size', `--bpf-lb-maglev-table-size=${size}: bpf_lxc is compiled for Maglev tables of ${compiled} entries and cannot read others; fix: leave the flag at ${compiled} with the BPF datapath (the memory datapath takes any of the listed sizes)`);
}

/** --cgroup-root names no usable cgroup v2 directory (socket load balancing cannot attach). */
export function cgroupRootUnusable(path: string, problem: string): ConfigError {
  return new ConfigError('cgroup-root', `--cgroup-root=${path} ${problem}; fix: name a cgroup v2 directory (the cgroup2 mount in /proc/mounts, e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified, or a cgroup below it), or turn socket load balancing off with --bpf-lb-sock=false`);
}

/** No cgroup v2 file system is mounted: --cgroup-root has no default. */
export function noCgroupV2(): ConfigError {
  return new ConfigError('cgroup-root', 'socket load balancing (--bpf-lb-sock=true) needs a cgroup v2 directory and /proc/mounts has no cgroup2 mount; fix: mount one (mount -t cgroup2 none /sys/fs/cgroup/unified) and/or name it with --cgroup-root, or turn socket load balancing off with --bpf-lb-sock=false');
}

/** bpf_sock.o is not built: socket load balancing cannot be attached. */
export function sockObjectMissing(path: string): ConfigError {
  return new ConfigError('bpf-lb-sock', `--bpf-lb-sock=true: the socket load-balancing programs are not built (${path} missing); fix: run npm run build (needs clang and libbpf-dev), or turn socket load balancing off with --bpf-lb-sock=false`);
}

/** Socket load balancing could not be loaded or attached (the start stops; links of an earlier start keep their programs). */
export class SockLBError extends Error {
  override readonly name = 'SockLBError';
}

/** Wraps a failed load or attach of bpf_sock with what was done and the fix (a ConfigError, which names its flag, as it is). */
export function sockAttachFailed(cgroup: string, err: unknown): Error {
  if (err instanceof ConfigError) return err;
  return new SockLBError(
    `socket load balancing: loading bpf_sock or attaching it to ${cgroup} failed: ${(err as Error).message}; fix: see the cause above (kernel >= 5.18 for cgroup links and bpf_set_retval, root or CAP_BPF+CAP_NET_ADMIN), or turn socket load balancing off with --bpf-lb-sock=false (links attached by an earlier start keep translating until then)`,
    { cause: err },
  );
}
