/**
 * `cellium ui`: the flow page (src/ui) for the agent's Hubble socket, on a loopback address until
 * Ctrl-C: flows live with `hubble observe`'s filters, a service map and a drop's details.
 */
import { defaultHubbleSocketPath } from '../../hubble/index.js';
import { DEFAULT_UI_PORT, FlowPage, UiListenError, parseListenAddress } from '../../ui/index.js';
import type { CliContext, CommandGroup } from '../context.js';
import { UsageError } from '../errors.js';

async function ui(ctx: CliContext, opts: { hubbleSocketPath?: string; address: string }): Promise<void> {
  let listen;
  try {
    listen = parseListenAddress(opts.address);
  } catch (err) {
    if (err instanceof UiListenError) throw new UsageError(err.message);
    throw err;
  }
  const page = new FlowPage(opts.hubbleSocketPath ?? defaultHubbleSocketPath({ env: ctx.io.env }), listen);
  const url = await page.start();
  ctx.io.stdout(`Flow page: ${url} (flows of unix://${page.hubbleSocket}; Ctrl-C stops)\n`);
  await new Promise<void>((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
  await page.stop();
}

/** Registers `cellium ui`. */
export const uiCommands: CommandGroup = (program, rt) => {
  program
    .command('ui')
    .description("serve the flow page (flows live, filters, service map, a drop's details) on a loopback address; Ctrl-C stops")
    .option('--hubble-socket-path <path>', "the agent's Hubble socket (its --hubble-socket-path; default hubble.sock beside the API socket)")
    .option('--address <host:port>', 'where the page listens: a loopback address only (127.0.0.1, [::1], localhost); port 0: any free port', `127.0.0.1:${DEFAULT_UI_PORT}`)
    .action(rt.action(ui));
};
