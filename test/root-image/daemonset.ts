// Runs containers of deploy/daemonset.yaml with podman the way the kubelet would: host network,
// privileged, the volume mounts with their propagation, the env, command and args, with every
// hostPath the test does not want to share with the host mapped to a directory of its own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const root = join(import.meta.dirname, '../..');

/** The parts of a container spec used here. */
export interface ContainerSpec {
  readonly name: string;
  readonly image: string;
  readonly command: string[];
  readonly args?: string[];
  readonly env?: { name: string; value?: string; valueFrom?: unknown }[];
  readonly securityContext?: { privileged?: boolean };
  readonly volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; mountPropagation?: string }[];
  readonly readinessProbe?: { exec?: { command: string[] } };
}

/** The DaemonSet's pod spec. */
export interface PodSpec {
  readonly hostNetwork?: boolean;
  readonly initContainers: ContainerSpec[];
  readonly containers: ContainerSpec[];
  readonly volumes: { name: string; hostPath: { path: string } }[];
}

/** deploy/daemonset.yaml's pod template spec. */
export function daemonSetPod(): PodSpec {
  const docs = parseAllDocuments(readFileSync(join(root, 'deploy/daemonset.yaml'), 'utf8')).map((d) => d.toJS() as { kind?: string; spec?: { template: { spec: PodSpec } } });
  const ds = docs.find((d) => d.kind === 'DaemonSet');
  if (!ds?.spec) throw new Error('deploy/daemonset.yaml has no DaemonSet');
  return ds.spec.template.spec;
}

/** How the test places the DaemonSet's hostPaths: each maps to a host path (itself, or a temp dir). */
export type HostPathMap = Readonly<Record<string, string>>;

/**
 * `podman run` options for `c` as the kubelet would start it. `sharedMounts` lists host mount
 * points that are shared (Bidirectional needs one; elsewhere the bind carries no propagation).
 */
export function podmanRunArgs(pod: PodSpec, c: ContainerSpec, hostPaths: HostPathMap, env: Readonly<Record<string, string>>, sharedMounts: ReadonlySet<string>): string[] {
  const args: string[] = [];
  if (pod.hostNetwork) args.push('--network', 'host');
  if (c.securityContext?.privileged) args.push('--privileged');
  for (const m of c.volumeMounts ?? []) {
    const vol = pod.volumes.find((v) => v.name === m.name);
    if (!vol) throw new Error(`volume ${m.name} of ${c.name} is not declared`);
    const host = hostPaths[vol.hostPath.path];
    if (host === undefined) throw new Error(`hostPath ${vol.hostPath.path} (volume ${m.name}) has no place in this test: add it to the HostPathMap`);
    const opts = [m.readOnly ? 'ro' : 'rw'];
    if (m.mountPropagation === 'HostToContainer') opts.push('rslave');
    if (m.mountPropagation === 'Bidirectional' && sharedMounts.has(host)) opts.push('rshared');
    args.push('-v', `${host}:${m.mountPath}:${opts.join(',')}`);
  }
  for (const e of c.env ?? []) {
    const value = e.value ?? env[e.name];
    // an optional key of a ConfigMap this test does not make: kubelet leaves the variable unset
    const optional = (e.valueFrom as { configMapKeyRef?: { optional?: boolean } } | undefined)?.configMapKeyRef?.optional === true;
    if (value === undefined && optional) continue;
    if (value === undefined) throw new Error(`env ${e.name} of ${c.name} comes from ${JSON.stringify(e.valueFrom)}: give its value`);
    args.push('--env', `${e.name}=${value}`);
  }
  return args;
}

/** Whether `path` is a shared mount point on this host (/proc/self/mountinfo). */
export function isSharedMount(path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((l) => {
      const f = l.split(' ');
      const sep = f.indexOf('-');
      return f[4] === path && f.slice(6, sep).some((o) => o.startsWith('shared:'));
    });
}

/** The container's command line with some flags of its args replaced (`--bpf-root=…`) or added. */
export function commandLine(c: ContainerSpec, override: Readonly<Record<string, string>> = {}): string[] {
  const args = (c.args ?? []).map((a) => {
    const flag = /^--([a-z0-9-]+)=/.exec(a)?.[1];
    return flag && flag in override ? `--${flag}=${override[flag]}` : a;
  });
  const given = new Set(args.map((a) => /^--([a-z0-9-]+)=/.exec(a)?.[1]));
  for (const [flag, value] of Object.entries(override)) if (!given.has(flag)) args.push(`--${flag}=${value}`);
  return [...c.command, ...args];
}
