// Conntrack flood for the privileged BPF tests, run in a pod's network namespace with
// `ip netns exec NS node ct-flood.mjs ...` (plain JS: starts fast). Two modes:
//   serve IP PORT                      accepts TCP connections and closes each at once; prints
//                                      "ready" once listening, runs until killed
//   flood IP PORT SRC COUNT PARALLEL   opens COUNT TCP connections from SRC (PARALLEL at a time),
//                                      each closed once connected; prints "done OK FAILED"
// Every connection is a new conntrack entry on each side; the loop is bounded by COUNT.
import { createConnection, createServer } from 'node:net';

const [mode, ip, port, src, count, parallel] = process.argv.slice(2);

if (mode === 'serve') {
  const server = createServer((sock) => {
    sock.on('error', () => undefined);
    sock.end();
  });
  server.listen(Number(port), ip, () => process.stdout.write('ready\n'));
} else if (mode === 'flood') {
  const total = Number(count);
  let started = 0;
  let ok = 0;
  let failed = 0;
  const one = () =>
    new Promise((resolve) => {
      const sock = createConnection({ host: ip, port: Number(port), localAddress: src, timeout: 3000 });
      sock.on('connect', () => {
        ok++;
        sock.end();
      });
      sock.on('timeout', () => sock.destroy(new Error('timeout')));
      sock.on('error', () => {
        failed++;
        resolve();
      });
      sock.on('close', (hadError) => {
        if (!hadError) resolve();
      });
      sock.on('data', () => undefined);
    });
  const worker = async () => {
    while (started < total) {
      started++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: Math.min(Number(parallel), total) }, worker));
  process.stdout.write(`done ${ok} ${failed}\n`);
} else {
  process.stderr.write(`usage: ct-flood.mjs serve IP PORT | flood IP PORT SRC COUNT PARALLEL\n`);
  process.exit(2);
}
