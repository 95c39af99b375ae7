/**
 * `npm run demo`: the README's main job. As root it runs the real story (BPF datapath, CNI plugin,
 * network namespaces); otherwise it says why and runs the same story on the in-memory datapath
 * through the API with `cellium policy trace` verdicts.
 */
import { errorMessage } from '../../hive/index.js';
import { privilegedDemo } from './privileged.js';
import { consoleNarrator, type Narrator } from './runner.js';
import { unprivilegedDemo } from './unprivileged.js';

/** What running the demo as root adds, said at the end of the unprivileged story. */
export const ROOT_ADDS =
  'Run as root (sudo npm run demo) to see the real datapath: the agent loads BPF programs and pinned maps, ' +
  'two pods get network namespaces and veths through the cellium-cni plugin, and the kernel drops the denied ping and TCP connection (with drop counters).';

/** Runs the demo; resolves with the exit code. */
export async function demo(n: Narrator = consoleNarrator(), root = process.getuid?.() === 0): Promise<number> {
  try {
    if (root) {
      n.say('Running as root: the real datapath (BPF programs on veths in network namespaces) through the CNI plugin.');
      await privilegedDemo(n);
    } else {
      n.say('Not root, so no BPF and no network namespaces: the same story on the in-memory datapath, through the API.');
      await unprivilegedDemo(n);
    }
    n.say('Demo finished.');
    if (!root) n.say(ROOT_ADDS);
    return 0;
  } catch (err) {
    process.stderr.write(`demo failed: ${errorMessage(err)}\n`);
    return 1;
  }
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === new URL(process.argv[1], 'file:').href;
if (invokedDirectly) {
  const mode = process.argv.includes('--memory') ? false : undefined;
  process.exitCode = await demo(consoleNarrator(), mode ?? process.getuid?.() === 0);
}
