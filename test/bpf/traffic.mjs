// Traffic helper for the privileged BPF tests, run inside a network namespace with
// `ip netns exec NS node traffic.mjs ...` (plain JS: starts fast, no TypeScript loader).
//   serve tcp|udp IP PORT          listen; print "ready", then "got <from>" per connection/datagram
//   connect tcp IP PORT SRC MS     connect from SRC (or "-"); exit 0 when connected, 1 otherwise
//   send udp IP PORT SRC           send three datagrams from SRC (or "-"); exit 0
import { createSocket } from 'node:dgram';
import { createConnection, createServer } from 'node:net';
import { setTimeout } from 'node:timers';

const [cmd, proto, ip, portText, src, msText] = process.argv.slice(2);
const port = Number(portText);
const family = ip.includes(':') ? 'udp6' : 'udp4';

if (cmd === 'serve' && proto === 'tcp') {
  const server = createServer((sock) => {
    sock.on('error', () => undefined);
    console.log(`got ${sock.remoteAddress}`);
    sock.end('ok');
  });
  server.listen(port, ip, () => console.log('ready'));
} else if (cmd === 'serve' && proto === 'udp') {
  const sock = createSocket(family);
  sock.on('message', (_msg, rinfo) => console.log(`got ${rinfo.address}`));
  sock.bind(port, ip, () => console.log('ready'));
} else if (cmd === 'connect' && proto === 'tcp') {
  const opts = { host: ip, port, ...(src && src !== '-' ? { localAddress: src } : {}) };
  const sock = createConnection(opts, () => {
    console.log('connected');
    sock.destroy();
    process.exit(0);
  });
  sock.on('error', (err) => {
    console.log(`error ${err.code}`);
    process.exit(1);
  });
  setTimeout(() => {
    console.log('timeout');
    process.exit(1);
  }, Number(msText || 1000));
} else if (cmd === 'send' && proto === 'udp') {
  const sock = createSocket(family);
  const go = () => {
    let left = 3;
    const one = () => sock.send('x', port, ip, () => (--left > 0 ? setTimeout(one, 50) : sock.close()));
    one();
  };
  if (src && src !== '-') sock.bind(0, src, go);
  else go();
} else {
  console.error('usage: traffic.mjs serve|connect|send tcp|udp IP PORT [SRC] [MS]');
  process.exit(2);
}
