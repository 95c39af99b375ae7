/**
 * What a test needs beyond Node and this checkout, in one place: `needs(...)` says in one line why
 * a test cannot run here (tap's `skip` reason), or false when it can. Every test that skips for a
 * missing capability asks here, so the reasons read the same everywhere and the unit tier holds:
 * under `npm run test:unit` (CELLIUM_TEST_TIER=unit, scripts/test-unit.sh) every privileged or
 * external need skips even as root, so the tier runs the same tests for every user. Folders whose
 * every test has such a need are named for it (test/root-*, test/etcd-*, test/k8s: see
 * docs/testing.md) and the unit tier does not even load them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bpfAvailable } from '../src/bpf/index.js';
import { etcdSkip } from '../bench/lib/etcd.js';
import { k8sUnavailable } from '../bench/lib/k8s-cluster.js';

/**
 * A capability a test needs:
 * - `root`: root, for network namespaces, links, routes, mounts, other users' files;
 * - `bpf`: root and a kernel that loads this build's BPF objects (implies `root`);
 * - `bpftool`: the bpftool command;
 * - `etcd`: an etcd binary to start (CELLIUM_TEST_ETCD or etcd on PATH);
 * - `k8s`: a Kubernetes control plane from scripts/k8s.sh (Go, its module proxy, etcd);
 * - `built`: dist/ built (`npm run build`), for tests that run the agent or CLI as a process.
 */
export type Need = 'root' | 'bpf' | 'bpftool' | 'etcd' | 'k8s' | 'built';

/** Needs the unit tier leaves out: a kernel, root, or a server outside this process tree. */
const PRIVILEGED: ReadonlySet<Need> = new Set<Need>(['root', 'bpf', 'bpftool', 'etcd', 'k8s']);

/** The environment variable that selects the unit tier. */
export const TIER_ENV = 'CELLIUM_TEST_TIER';

const ROOT_DIR = join(import.meta.dirname, '..');

/** True while `npm run test:unit` runs. */
export function unitTier(): boolean {
  return process.env[TIER_ENV] === 'unit';
}

const isRoot = (): boolean => process.getuid?.() === 0;

function commandWorks(cmd: string, args: readonly string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore' });
  return !r.error && r.status === 0;
}

/** Why one need is unmet here (without the tier), or false. `doing` says what the test does with it. */
function unmet(need: Need, doing: string | undefined): string | false {
  const what = doing ? `: ${doing}` : '';
  switch (need) {
    case 'root':
      return isRoot() ? false : `needs root${what || ' for network namespaces and links'}`;
    case 'bpf': {
      if (!isRoot()) return `needs root${what || ' for BPF and network namespaces'}`;
      const avail = bpfAvailable();
      return avail.ok ? false : `needs BPF: ${avail.reason}`;
    }
    case 'bpftool':
      return commandWorks('bpftool', ['version']) ? false : 'needs bpftool (scripts/packages.d; setup.sh installs it as root)';
    case 'etcd':
      return etcdSkip();
    case 'k8s': {
      const etcd = unmet('etcd', undefined);
      if (etcd) return etcd;
      return k8sUnavailable();
    }
    case 'built':
      return existsSync(join(ROOT_DIR, 'dist', 'src', 'cmd', 'agent.js')) ? false : 'needs dist/ built: run npm run build (npm test builds it)';
  }
}

/**
 * Why a test needing `list` cannot run here, as one line for tap's `skip` option, or false when it
 * can. `doing` (optional) says what the test does that needs root, e.g. 'creates network
 * namespaces and veth pairs'. In the unit tier, a privileged or external need always skips.
 */
export function needs(list: Need | readonly Need[], doing?: string): string | false {
  const all: readonly Need[] = typeof list === 'string' ? [list] : list;
  if (unitTier()) {
    const left = all.filter((n) => PRIVILEGED.has(n));
    if (left.length > 0) return `not in the unit tier (npm run test:unit): needs ${left.join(', ')}${doing ? ` (${doing})` : ''}; npm test runs it`;
  }
  // the first unmet need is the one line said
  for (const n of all) {
    const why = unmet(n, doing);
    if (why) return why;
  }
  return false;
}
