// Fixtures of the socket load-balancing tests (sock-lb, nodeport): echo servers on ::1 in the test
// process, a client process in the host network namespace that the test moves into its cgroup
// (sock-client.mjs), and echo listeners in backend pods.
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { cgroupV2Mount } from '../../src/bpf/index.js';
import type { Test } from 'tap';
import { until, type Cleanup, type Pod } from '../root-datapath-agent/fixtures.js';

/** TCP and UDP echo servers on ::1 in this process (host network namespace, outside the test cgroup): IPv6 backends. */
export async function loopbackEchoes(c: Cleanup): Promise<{ tcpPort: number; udpPort: number; hits: () => number }> {
  let n = 0;
  const tcp = createServer((sock) => {
    n++;
    sock.on('error', () => undefined);
    sock.pipe(sock);
  });
  await new Promise<void>((r) => tcp.listen(0, '::1', r));
  const udp = createSocket('udp6');
  udp.on('message', (msg, rinfo) => {
    n++;
    udp.send(msg, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => udp.bind(0, '::1', r));
  c.teardown(() => new Promise<void>((r) => tcp.close(() => r())));
  c.teardown(() => udp.close());
  return { tcpPort: (tcp.address() as AddressInfo).port, udpPort: udp.address().port, hits: () => n };
}

/** A client process in the host network namespace (sock-client.mjs): one command, one answer. */
export class Client {
  private out = '';
  private n = 0;
  readonly proc: ChildProcess;
  constructor(c: Cleanup) {
    this.proc = spawn(process.execPath, [join(import.meta.dirname, 'sock-client.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.proc.stdout!.on('data', (d: Buffer) => void (this.out += d.toString()));
    const exited = new Promise<void>((r) => this.proc.on('exit', () => r()));
    c.teardown(async () => {
      if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
      await exited;
    });
  }
  async ready(): Promise<boolean> {
    return until(() => this.out.includes('ready\n'), 10000, 20);
  }
  /** Sends `cmd ...args ID`; the answer's words after the ID, or ['none'] when none came in 10 s. */
  async ask(cmd: string, ...args: string[]): Promise<string[]> {
    const id = `q${++this.n}`;
    this.proc.stdin!.write(`${[cmd, ...args, id].join(' ')}\n`);
    const re = new RegExp(`^${cmd} ${id} (.*)$`, 'm');
    await until(() => re.test(this.out), 10000, 10);
    return re.exec(this.out)?.[1]?.split(' ') ?? ['none'];
  }
}

/** Two clients: `inside` moved into the test's cgroup `cg` (alone there), `outside` left where the test runs. */
export async function cgroupClients(t: Test, c: Cleanup, cg: string): Promise<{ inside: Client; outside: Client }> {
  const inside = new Client(c);
  t.ok(await inside.ready(), 'the inside client runs');
  writeFileSync(join(cg, 'cgroup.procs'), String(inside.proc.pid));
  t.equal((await inside.ask('cgroup'))[0], cg.slice(cgroupV2Mount()!.length), 'only the client process is in the test cgroup');
  const outside = new Client(c);
  t.ok(await outside.ready(), 'the outside client runs');
  return { inside, outside };
}

/** Asks `client` for `n` TCP echoes from ip:port; how many came back with getpeername showing ip:port (each other answer fails `t`). */
export async function tcpEchoes(t: Test, client: Client, ip: string, port: number, n: number): Promise<number> {
  const peer = ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
  let ok = 0;
  for (let i = 0; i < n; i++) {
    const r = await client.ask('tcp', ip, String(port));
    if (r[0] === 'ok' && r[1] === peer) ok++;
    else t.fail(`TCP ${i} to ${peer}: ${r.join(' ')}`);
  }
  return ok;
}

/** Starts a `proto` (tcpecho, udpecho) listener on `port` in the pod; the ID its hits are counted under. */
export async function listen(pod: Pod, proto: string, port: number): Promise<string> {
  const id = pod.traffic.nextId();
  pod.traffic.command(`listen ${proto} ${pod.ip} ${port} ${id}`);
  if (!(await pod.traffic.waitFor('ready', id, 10000))) throw new Error(`${pod.name} did not listen on ${port}`);
  return id;
}
