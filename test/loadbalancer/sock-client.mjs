// A client for the socket load-balancing test, run in the host network namespace (plain JS: starts
// fast). The test moves it into (or leaves it out of) its own cgroup. Commands, one per line, each
// answered with one line tagged by its ID:
//   cgroup ID             -> "cgroup ID PATH" (its cgroup v2 path)
//   tcp HOST PORT ID      -> connects, sends a line, waits for the echo:
//                            "tcp ID ok PEER" (PEER: getpeername's address:port) | "tcp ID err CODE"
//   udp HOST PORT ID      -> one datagram from an unconnected socket (sendto), waits for the echo:
//                            "udp ID ok FROM" (FROM: recvfrom's source address:port) | "udp ID err CODE"
//   udpc HOST PORT ID     -> the same on a connected socket: "udpc ID ok PEER FROM" | "udpc ID err CODE"
// Every wait gives up after 3 s with the code TIMEOUT.
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { createInterface } from 'node:readline';
import { clearTimeout, setTimeout } from 'node:timers';

const say = (line) => process.stdout.write(`${line}\n`);
const WAIT_MS = 3000;
const hostPort = (a, p) => `${a.includes(':') ? `[${a}]` : a}:${p}`;

function tcp(host, port, id) {
  let done = false;
  const finish = (line, sock) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    sock.destroy();
    say(line);
  };
  const sock = createConnection({ host, port: Number(port) });
  const timer = setTimeout(() => finish(`tcp ${id} err TIMEOUT`, sock), WAIT_MS);
  sock.on('connect', () => sock.write('hello\n'));
  sock.on('data', () => finish(`tcp ${id} ok ${hostPort(sock.remoteAddress, sock.remotePort)}`, sock));
  sock.on('error', (err) => finish(`tcp ${id} err ${err.code}`, sock));
}

function udp(kind, host, port, id) {
  const sock = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  let done = false;
  const finish = (line) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    sock.close();
    say(line);
  };
  const timer = setTimeout(() => finish(`${kind} ${id} err TIMEOUT`), WAIT_MS);
  sock.on('error', (err) => finish(`${kind} ${id} err ${err.code}`));
  sock.on('message', (_msg, rinfo) => {
    const from = hostPort(rinfo.address, rinfo.port);
    if (kind === 'udp') return finish(`udp ${id} ok ${from}`);
    const peer = sock.remoteAddress();
    finish(`udpc ${id} ok ${hostPort(peer.address, peer.port)} ${from}`);
  });
  const sent = (err) => {
    if (err) finish(`${kind} ${id} err ${err.code}`);
  };
  if (kind === 'udp') sock.send('hello', Number(port), host, sent);
  else {
    sock.connect(Number(port), host, (err) => {
      if (err) return finish(`udpc ${id} err ${err.code}`);
      sock.send('hello', sent);
    });
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const [cmd, ...args] = line.trim().split(/\s+/);
  if (cmd === 'cgroup') {
    const path = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'))?.slice(3) ?? '?';
    say(`cgroup ${args[0]} ${path}`);
  } else if (cmd === 'tcp') tcp(args[0], args[1], args[2]);
  else if (cmd === 'udp' || cmd === 'udpc') udp(cmd, args[0], args[1], args[2]);
});
process.stdin.on('end', () => process.exit(0));
say('ready');
