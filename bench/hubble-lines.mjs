// The hubble bench's reader of `hubble observe -o json` (bench/hubble.bench.ts): runs the command
// given as arguments (the hubble CLI and its own arguments), reads its output (a response a line),
// and prints `pid <the CLI's pid>` once, then `<flows> <events lost>` every 10 ms, so the bench's
// process, which is the agent side, does not spend its CPU reading the CLI's output. Flows are the
// lines; lost_events lines add the events they report lost. Stops the CLI when stopped.
/* global setInterval */
import { spawn } from 'node:child_process';

const [bin, ...args] = process.argv.slice(2);
const cli = spawn(bin, args, { stdio: ['ignore', 'pipe', 'ignore'] });
process.stdout.write(`pid ${cli.pid}\n`);
let flows = 0;
let lost = 0;
let tail = Buffer.alloc(0);
cli.stdout.on('data', (chunk) => {
  const b = tail.length ? Buffer.concat([tail, chunk]) : chunk;
  const end = b.lastIndexOf(10) + 1;
  tail = Buffer.from(b.subarray(end));
  // the lines counted in the bytes; the text split into lines only where a lost_events response is
  if (b.subarray(0, end).indexOf('"lost_events"') === -1) {
    for (let i = b.indexOf(10); i !== -1 && i < end; i = b.indexOf(10, i + 1)) flows++;
    return;
  }
  for (const l of b.subarray(0, end).toString().split('\n')) {
    if (l.includes('"lost_events"')) lost += Number(/"num_events_lost":\s*"?(\d+)/.exec(l)?.[1] ?? 0);
    else if (l.includes('"flow"')) flows++;
  }
});
cli.on('exit', () => process.exit(0));
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cli.kill();
    process.exit(0);
  });
}
setInterval(() => process.stdout.write(`${flows} ${lost}\n`), 10);
