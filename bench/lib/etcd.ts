/**
 * A real etcd for the kvstore tests and benchmarks: Debian's etcd 3.4 (scripts/packages.d/50-kvstore.txt)
 * on loopback, on free ports and a temporary data directory of its own, stopped by PID by `close()`.
 * `etcdSkip()` names why etcd cannot run here (no binary) in one line.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';

/** The etcd binary (Debian installs it as /usr/bin/etcd). */
export const ETCD_BIN = process.env.CELLIUM_TEST_ETCD ?? 'etcd';

/** Why etcd tests cannot run here, or false. */
export function etcdSkip(): string | false {
  const r = spawnSync(ETCD_BIN, ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return `needs an etcd binary (${ETCD_BIN}): apt-get install etcd-server (scripts/packages.d/50-kvstore.txt)`;
  return false;
}

/** A free TCP port on loopback (bound, read and released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** TLS files for a server (and the client certificate it requires). */
export interface EtcdTls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

/** A running (or stopped) test etcd. */
export interface TestEtcd {
  /** The client URL (http:// or https://127.0.0.1:port). */
  readonly endpoint: string;
  readonly dataDir: string;
  /** A client for checking etcd's contents directly (closed at teardown). */
  readonly client: Etcd3;
  /** Whether the process runs. */
  running(): boolean;
  /** Stops etcd (SIGTERM, then SIGKILL after 5 s); the data directory stays. */
  stop(): Promise<void>;
  /** Starts it again on the same ports and data. */
  start(): Promise<void>;
  /** Writes a Cilium etcd config file (endpoints and, with TLS, the client's files) and returns its path. */
  configFile(extra?: Record<string, string>): string;
}

/** Starts etcd; `close()` stops it (by PID) and removes its data. */
export async function launchEtcd(opts: { tls?: EtcdTls } = {}): Promise<TestEtcd & { close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cellium-etcd-'));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const scheme = opts.tls ? 'https' : 'http';
  const endpoint = `${scheme}://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name', 'test', '--data-dir', join(dataDir, 'data'),
    '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
    '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `test=${peer}`, '--initial-cluster-state', 'new',
    '--log-level', 'error', '--logger', 'zap',
    ...(opts.tls ? ['--cert-file', opts.tls.cert, '--key-file', opts.tls.key, '--trusted-ca-file', opts.tls.ca, '--client-cert-auth'] : []),
  ];
  let proc: ChildProcess | undefined;
  let stderr = '';
  const launch = async (): Promise<void> => {
    stderr = '';
    const p = spawn(ETCD_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    p.stderr!.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-4000);
    });
    proc = p;
    await waitReady(client, p, () => stderr);
  };
  const client = new Etcd3({
    hosts: endpoint,
    ...(opts.tls ? { credentials: { rootCertificate: readBuf(opts.tls.ca), certChain: readBuf(opts.tls.clientCert), privateKey: readBuf(opts.tls.clientKey) } } : {}),
  });
  const stop = async (): Promise<void> => {
    const p = proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGTERM');
    const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  const close = async (): Promise<void> => {
    client.close();
    await stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await launch();
  } catch (err) {
    await close();
    throw err;
  }
  return {
    close,
    endpoint,
    dataDir,
    client,
    running: () => !!proc && proc.exitCode === null && proc.signalCode === null,
    stop,
    start: launch,
    configFile(extra = {}) {
      const file = join(dataDir, `etcd-config-${Math.random().toString(36).slice(2)}.yaml`);
      const lines = ['endpoints:', `- ${endpoint}`];
      if (opts.tls) lines.push(`trusted-ca-file: ${opts.tls.ca}`, `cert-file: ${opts.tls.clientCert}`, `key-file: ${opts.tls.clientKey}`);
      for (const [k, v] of Object.entries(extra)) lines.push(`${k}: ${v}`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      return file;
    },
  };
}

function readBuf(file: string): Buffer {
  return readFileSync(file);
}

/** Waits (at most 20 s) until etcd answers a read. */
async function waitReady(client: Etcd3, p: ChildProcess, err: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (p.exitCode !== null || p.signalCode !== null) throw new Error(`etcd exited (${p.exitCode ?? p.signalCode}): ${err()}`);
    try {
      await client.get('cellium-test-ready').string();
      return;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`etcd did not answer within 20 s: ${(e as Error).message}; ${err()}`, { cause: e });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Makes a CA, a server certificate for 127.0.0.1 and a client certificate with openssl in `dir`. */
export function makeTls(dir: string): EtcdTls {
  const run = (...args: string[]): void => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  };
  writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=cellium-test-ca');
  for (const name of ['server', 'client']) {
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=cellium-test-${name}`);
    run('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', 'san.cnf');
  }
  return {
    ca: join(dir, 'ca.crt'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key'),
    clientCert: join(dir, 'client.crt'), clientKey: join(dir, 'client.key'),
  };
}
