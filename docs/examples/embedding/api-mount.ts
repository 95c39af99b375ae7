/**
 * Embedding example (docs/embedding.md, "Mounting the API in your express app"): an express app of
 * its own that mounts Cellium's API handlers under `/cellium`, next to its own routes, with the
 * cells they call (IPAM, policy) in a hive of its own, imported through the package exports.
 * test/embedding runs it.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Hive, silentLogger } from 'cellium/hive';
import { apiRouter, apiRouterCell } from 'cellium/cells/api-server';
import { ipamHandlersCell, policyHandlersCell } from 'cellium/cells/api-handlers';
import { identityCell } from 'cellium/cells/identity';
import { ipamCell } from 'cellium/cells/ipam';
import { policyCell } from 'cellium/cells/policy';
import { statedirCell } from 'cellium/cells/statedir';

/** The running app: its base URL, and how to stop it. */
export interface MountedApp {
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts an express app on 127.0.0.1 with its own `GET /own` and Cellium's API under `/cellium`. */
export async function startAppWithCelliumApi(opts: { range: string; stateDir: string; maxBodyBytes?: number }): Promise<MountedApp> {
  const hive = new Hive([apiRouterCell, statedirCell, identityCell, policyCell, ipamCell, ipamHandlersCell, policyHandlersCell], { logger: silentLogger() });
  hive.configure({ argv: [`--ipv4-range=${opts.range}`, `--state-dir=${opts.stateDir}`, ...(opts.maxBodyBytes ? [`--api-max-body-bytes=${opts.maxBodyBytes}`] : [])] });
  await hive.start();
  const app = express();
  app.get('/own', (_req, res) => {
    res.json({ mine: true });
  });
  app.use('/cellium', apiRouter(hive));
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await hive.stop();
    },
  };
}
