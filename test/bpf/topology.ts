// Privileged test topology for the BPF datapath: a "host" and a "pod" network namespace joined
// by a veth (lxc<id> in host, eth0 in pod), the endpoint address in the pod, the gateway and peer
// addresses on the host side; plus traffic probes (ping, TCP connect, UDP) between them and a
// per-test bpffs root. Everything is named uniquely and removed by cleanup().
import { execFile as execFileCb, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { bpfAvailable, ensureBpffs } from '../../src/bpf/index.js';

const execFile = promisify(execFileCb);
const TRAFFIC = join(fileURLToPath(new URL('.', import.meta.url)), 'traffic.mjs');

/** Why privileged BPF tests skip here, or false when they can run. */
export function skipUnlessBpf(): string | false {
  if (process.getuid?.() !== 0) return 'needs root: loads BPF programs and creates network namespaces';
  const avail = bpfAvailable();
  return avail.ok ? false : `BPF unavailable: ${avail.reason}`;
}

/** A short unique suffix. */
export function uniq(): string {
  return randomBytes(3).toString('hex');
}

/** Runs `ip args…` and returns stdout. */
export function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8' });
}

/** A fresh BPF root under /sys/fs/bpf (mounting bpffs when needed) and its removal. */
export function testBpfRoot(): { root: string; remove: () => void } {
  const root = `/sys/fs/bpf/cellium-test-${uniq()}`;
  ensureBpffs(root);
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** The endpoint's veth between two namespaces. */
export interface Topology {
  readonly hostNs: string;
  readonly podNs: string;
  readonly hostNsPath: string;
  readonly hostIf: string;
  readonly ifIndex: number;
  readonly mac: string;
  readonly hostMac: string;
  cleanup(): void;
}

function linkInfo(ns: string, dev: string): { ifindex: number; address: string } {
  return (JSON.parse(ip('-n', ns, '-j', 'link', 'show', dev)) as { ifindex: number; address: string }[])[0]!;
}

/**
 * Creates the namespaces and veth: pod eth0 holds ep4/prefix4 and ep6/prefix6; host lxc<id> holds
 * host4/prefix4, host6/prefix6 and every address of `peers` as a host route.
 */
export function createTopology(a: { ep4: string; ep6: string; host4: string; host6: string; prefix4: number; prefix6: number; peers: readonly string[] }): Topology {
  const id = uniq();
  const hostNs = `clbh-${id}`;
  const podNs = `clbp-${id}`;
  const hostIf = `lxc${id}`;
  const cleanup = (): void => {
    for (const ns of [hostNs, podNs]) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // already gone
      }
    }
  };
  try {
    ip('netns', 'add', hostNs);
    ip('netns', 'add', podNs);
    ip('-n', hostNs, 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', podNs);
    for (const [ns, dev] of [[hostNs, hostIf], [podNs, 'eth0']] as const) {
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      ip('-n', ns, 'link', 'set', dev, 'up');
    }
    ip('-n', podNs, 'addr', 'add', `${a.ep4}/${a.prefix4}`, 'dev', 'eth0');
    ip('-n', podNs, 'addr', 'add', `${a.ep6}/${a.prefix6}`, 'dev', 'eth0', 'nodad');
    ip('-n', hostNs, 'addr', 'add', `${a.host4}/${a.prefix4}`, 'dev', hostIf);
    ip('-n', hostNs, 'addr', 'add', `${a.host6}/${a.prefix6}`, 'dev', hostIf, 'nodad');
    for (const p of a.peers) {
      if (p === a.host4 || p === a.host6) continue;
      const v6 = p.includes(':');
      ip('-n', hostNs, 'addr', 'add', `${p}/${v6 ? 128 : 32}`, 'dev', hostIf, ...(v6 ? ['nodad'] : []));
    }
    const host = linkInfo(hostNs, hostIf);
    const pod = linkInfo(podNs, 'eth0');
    return { hostNs, podNs, hostNsPath: `/var/run/netns/${hostNs}`, hostIf, ifIndex: host.ifindex, mac: pod.address, hostMac: host.address, cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

/** Pings `dst` once from namespace `ns` (optionally from `src`); true when a reply came back. */
export async function ping(ns: string, dst: string, src?: string): Promise<boolean> {
  const args = ['netns', 'exec', ns, 'ping', ...(dst.includes(':') ? ['-6'] : []), '-c', '1', '-W', '0.6', '-q', ...(src ? ['-I', src] : []), dst];
  try {
    await execFile('ip', args);
    return true;
  } catch {
    return false;
  }
}

/**
 * A TCP connect or UDP exchange: a server in `serverNs` on dst:port, a client in `clientNs` from
 * src (TCP: connect with a `ms` timeout; UDP: three datagrams). True when the server saw the
 * connection or a datagram by the time the client finished (plus a short grace).
 */
export async function exchange(proto: 'tcp' | 'udp', clientNs: string, serverNs: string, src: string, dst: string, port: number, ms = 800): Promise<boolean> {
  const server = spawn('ip', ['netns', 'exec', serverNs, process.execPath, TRAFFIC, 'serve', proto, dst, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  server.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const waitFor = async (word: string, limitMs: number): Promise<boolean> => {
    const end = Date.now() + limitMs;
    while (!out.includes(word) && Date.now() < end && server.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    return out.includes(word);
  };
  try {
    if (!(await waitFor('ready', 10000))) throw new Error(`traffic server did not start: ${out}`);
    const args = proto === 'tcp' ? ['connect', 'tcp', dst, String(port), src, String(ms)] : ['send', 'udp', dst, String(port), src];
    await execFile('ip', ['netns', 'exec', clientNs, process.execPath, TRAFFIC, ...args]).catch(() => undefined);
    return await waitFor('got', 300);
  } finally {
    server.kill('SIGKILL');
  }
}
