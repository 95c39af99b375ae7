// Helpers for the privileged netlink tests: unique names, network namespaces made with `ip netns`
// (the tests, not the library, may spawn `ip`), and `ip -j` output for checking results.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';


/** A short unique suffix (interface names are at most 15 bytes). */
export function uniq(): string {
  return randomBytes(3).toString('hex');
}

/** Runs `ip args…` and returns its stdout. */
export function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8' });
}

/** Runs `ip -j args…` and parses the JSON it prints ([] when it prints nothing). */
export function ipJson<T = Record<string, unknown>>(...args: string[]): T[] {
  const out = ip('-j', ...args).trim();
  return out ? (JSON.parse(out) as T[]) : [];
}

/** Creates the named network namespace; returns its name, path and a cleanup that deletes it. */
export function createNetns(name: string): { name: string; path: string; remove: () => void } {
  ip('netns', 'add', name);
  return {
    name,
    path: `/var/run/netns/${name}`,
    remove: () => {
      try {
        ip('netns', 'del', name);
      } catch {
        // already gone
      }
    },
  };
}

/** A "host" and a "pod" namespace named `<prefix>-h-<id>` / `<prefix>-p-<id>`, removed when the test ends. */
export function hostAndPod(t: { teardown(fn: () => void): void }, prefix: string): { id: string; hostNs: ReturnType<typeof createNetns>; podNs: ReturnType<typeof createNetns> } {
  const id = uniq();
  const hostNs = createNetns(`${prefix}-h-${id}`);
  t.teardown(hostNs.remove);
  const podNs = createNetns(`${prefix}-p-${id}`);
  t.teardown(podNs.remove);
  return { id, hostNs, podNs };
}
