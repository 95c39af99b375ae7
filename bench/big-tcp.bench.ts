/**
 * BIG TCP: pod-to-pod TCP throughput (iperf3, IPv4, one stream) between two pods of one node, with
 * an agent started with --enable-ipv4-big-tcp --enable-ipv6-big-tcp against one without, in the
 * same run, interleaved; each pair once per way of running bpf_lxc (--bpf-lxc-program=shared, the
 * default, and per-endpoint, the previous releases'), so four agents. The "host device" both agents see is a veth of the run's own raised to
 * 196608-byte GSO/GRO maximums (as an operator raises the uplink's), named by --big-tcp-device.
 * Pods are plumbed through the cellium-cni shim (ADD). Needs root and iperf3; prints why and stops
 * otherwise.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { machineLoad, printTable, ratio, stats } from './lib/report.js';
import { root, scratchBase, startAgent, type AgentProcess } from './lib/agent-process.js';

const ROUNDS = 3;
const SECONDS = 3;
const BIG = 196608;

function which(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/** Runs the shim for ADD; returns the pod's IPv4 address. */
function add(socketPath: string, id: string, ns: string): string {
  const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath });
  const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: id, CNI_NETNS: `/var/run/netns/${ns}`, CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin', CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=${id}` };
  const r = spawnSync(join(root(), 'bin', 'cellium-cni'), { env, input: conf, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ADD ${id}: ${r.stdout}`);
  return String((JSON.parse(r.stdout) as { ips: Array<{ address: string }> }).ips[0]!.address).split('/')[0]!;
}

/** One iperf3 run from client ns to the server ns at ip; bits per second received. */
async function iperf(serverNs: string, clientNs: string, ip: string): Promise<number> {
  const server = spawn('ip', ['netns', 'exec', serverNs, 'iperf3', '-s', '-1', '-B', ip], { stdio: 'ignore' });
  const done = new Promise((r) => server.once('exit', r));
  try {
    for (let i = 0; ; i++) {
      const out = spawnSync('ip', ['netns', 'exec', clientNs, 'iperf3', '-c', ip, '-t', String(SECONDS), '-J'], { encoding: 'utf8', timeout: (SECONDS + 20) * 1000 });
      const res = (out.status === 0 ? JSON.parse(out.stdout) : {}) as { error?: string; end?: { sum_received?: { bits_per_second: number } } };
      const bps = res.end?.sum_received?.bits_per_second;
      if (bps !== undefined) return bps;
      if (i >= 20) throw new Error(`iperf3 -c ${ip}: ${res.error ?? ''} ${out.stdout.slice(-300)} ${out.stderr}`);
      await new Promise((r) => setTimeout(r, 100)); // the server is not listening yet
    }
  } finally {
    if (server.exitCode === null) server.kill('SIGTERM');
    await done;
  }
}

async function main(): Promise<void> {
  const why = process.getuid?.() !== 0 ? 'needs root (network namespaces, veth pairs)' : !which('iperf3') ? 'needs iperf3 (scripts/packages.d/30-e2e.txt)' : undefined;
  if (why) {
    console.log(`big-tcp: skipped: ${why}`);
    return;
  }
  const tag = randomBytes(2).toString('hex');
  const dir = mkdtempSync(join(scratchBase(), 'cellium-bench-bigtcp-'));
  const uplink = `cbu${tag}`;
  const namespaces: string[] = [];
  const agents: AgentProcess[] = [];
  const bpfRoots: string[] = [];
  try {
    execFileSync('ip', ['link', 'add', uplink, 'type', 'veth', 'peer', 'name', `${uplink}p`]);
    execFileSync('ip', ['link', 'set', uplink, 'gso_max_size', String(BIG), 'gro_max_size', String(BIG)]);
    // iproute2 before 6.3 does not know the IPv4 keys: the agent then warns and leaves IPv4 alone
    spawnSync('ip', ['link', 'set', uplink, 'gso_ipv4_max_size', String(BIG), 'gro_ipv4_max_size', String(BIG)], { stdio: 'ignore' });
    const start = async (name: string, pool: string, flags: Record<string, string | boolean>): Promise<{ socketPath: string; pods: [string, string]; ip: string }> => {
      const sub = join(dir, name);
      mkdirSync(sub);
      const bpfRoot = `/sys/fs/bpf/cellium-bench-${name}-${tag}`;
      bpfRoots.push(bpfRoot);
      const socketPath = join(sub, 'cellium.sock');
      agents.push(await startAgent({ dir: sub, bpfRoot, socketPath, pool, flags }));
      const pods: [string, string] = [`cbt${tag}-${name}a`, `cbt${tag}-${name}b`];
      for (const ns of pods) {
        execFileSync('ip', ['netns', 'add', ns]);
        namespaces.push(ns);
      }
      const ip = add(socketPath, `${name}a${tag}`, pods[0]);
      add(socketPath, `${name}b${tag}`, pods[1]);
      return { socketPath, pods, ip };
    };
    const programs = ['shared', 'per-endpoint'] as const;
    type Agent = Awaited<ReturnType<typeof start>>;
    const runs: Array<{ program: (typeof programs)[number]; big: Agent; plain: Agent }> = [];
    for (const [i, program] of programs.entries()) {
      const tagged = { 'bpf-lxc-program': program };
      runs.push({
        program,
        big: await start(`big${i}`, `10.218.${2 * i}.0/24`, { ...tagged, 'enable-ipv4-big-tcp': true, 'enable-ipv6-big-tcp': true, 'big-tcp-device': uplink }),
        plain: await start(`plain${i}`, `10.218.${2 * i + 1}.0/24`, tagged),
      });
    }
    const sizes = (ns: string): string => {
      const [l] = JSON.parse(execFileSync('ip', ['-n', ns, '-d', '-j', 'link', 'show', 'eth0'], { encoding: 'utf8' })) as Array<Record<string, number>>;
      return `gso ${l!.gso_max_size} / gro ${l!.gro_max_size}${l!.gso_ipv4_max_size ? ` / gso_ipv4 ${l!.gso_ipv4_max_size}` : ''}`;
    };
    const gbps = runs.map(() => ({ big: [] as number[], plain: [] as number[] }));
    for (let i = 0; i < ROUNDS; i++) {
      // the variants' order alternates by round
      const order = i % 2 ? [...runs.keys()].reverse() : [...runs.keys()];
      for (const k of order) {
        const r = runs[k]!;
        gbps[k]!.plain.push((await iperf(r.plain.pods[0], r.plain.pods[1], r.plain.ip)) / 1e9);
        gbps[k]!.big.push((await iperf(r.big.pods[0], r.big.pods[1], r.big.ip)) / 1e9);
      }
    }
    // stats() reports milliseconds by name; here the samples are Gbit/s
    const rows: (string | number)[][] = [];
    for (const [k, r] of runs.entries()) {
      const b = stats(gbps[k]!.big);
      const p = stats(gbps[k]!.plain);
      rows.push(
        [`${r.program} bpf_lxc: BIG TCP on (--enable-ipv4-big-tcp --enable-ipv6-big-tcp)`, b.p50Ms, b.meanMs, sizes(r.big.pods[0]), ratio(b.p50Ms, p.p50Ms)],
        [`${r.program} bpf_lxc: BIG TCP off (baseline, the default)`, p.p50Ms, p.meanMs, sizes(r.plain.pods[0]), '1.00x'],
      );
    }
    printTable(`pod-to-pod iperf3 TCP throughput, IPv4, one stream, ${SECONDS} s x ${ROUNDS} rounds, interleaved, per way of running bpf_lxc (--bpf-lxc-program) (Gbit/s; ${machineLoad()})`, ['what', 'median Gbit/s', 'mean Gbit/s', 'pod eth0 sizes', 'vs without'], rows);
  } finally {
    for (const a of agents) await a.stop();
    for (const n of namespaces) spawnSync('ip', ['netns', 'del', n], { stdio: 'ignore' });
    spawnSync('ip', ['link', 'del', uplink], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
    for (const r of bpfRoots) rmSync(r, { recursive: true, force: true });
  }
}

await main();
