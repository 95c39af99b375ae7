// Child process of journaled-file.test.ts: claims identities in the embedded backend at `argv[2]`
// as fast as it can, 8 at a time, and prints `acked <id>` for each claim that resolved (durable),
// until the parent kills it with SIGKILL.
import { EmbeddedBackend } from '../../src/cells/identity/index.js';

const backend = new EmbeddedBackend(process.argv[2]!);
await backend.load();
let next = 1000;
for (;;) {
  await Promise.all(Array.from({ length: 8 }, async () => {
    const id = next++;
    await backend.claim(`k8s:app=a${id}`, [`k8s:app=a${id}`], id);
    process.stdout.write(`acked ${id}\n`);
  }));
}
