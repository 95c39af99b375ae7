/**
 * The DEL queue: DEL requests the shim wrote to a directory while the agent was unreachable
 * (`<unix-ns>-<pid>-<container id>.json`, see docs/cni.md). At start every file is decoded, run as
 * a DEL in name order (the order the DELs came in) and removed, whatever the outcome: a file that
 * cannot be decoded is logged and dropped (the shim wrote it atomically, so it is not partial).
 * A directory that cannot be listed (not a directory, no permission) is logged as an error and the
 * replay gives up, as Cilium's agent does: the server must still come up and serve new commands.
 */
import { readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../hive/logger.js';
import { decodeCniRequest, type CniRequest, type CniResponse } from '../../cni/protocol.js';

/** What a replay did. */
export interface ReplayOutcome {
  /** Files whose DEL succeeded. */
  readonly done: string[];
  /** Files dropped: undecodable, not a DEL, or the DEL failed (`file: why`). */
  readonly dropped: string[];
  /** Why the directory could not be listed (nothing was replayed), when it could not. */
  readonly unreadable?: string;
}

/** The queue files, in the order they were written (temporary `.name.tmp` files are skipped). */
export async function queuedFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Replays the queue once through `del`. */
export async function replayDeleteQueue(dir: string, del: (req: CniRequest) => Promise<CniResponse>, log: Logger): Promise<ReplayOutcome> {
  let files: string[];
  try {
    files = await queuedFiles(dir);
  } catch (err) {
    const why = (err as Error).message;
    log.error({ dir, err: why }, 'cannot list the CNI DEL queue directory: DELs queued while the agent was down are not replayed');
    return { done: [], dropped: [], unreadable: why };
  }
  const out: ReplayOutcome = { done: [], dropped: [] };
  for (const name of files) {
    const path = join(dir, name);
    try {
      const req = decodeCniRequest(await readFile(path));
      if (req.command !== 'DEL') throw new Error(`holds a ${req.command}, not a DEL`);
      const resp = await del(req);
      if (resp.exitCode !== 0) throw new Error(`DEL failed: ${resp.body.trim()}`);
      out.done.push(name);
    } catch (err) {
      log.warn({ file: path, err: (err as Error).message }, 'dropping a queued CNI DEL');
      out.dropped.push(`${name}: ${(err as Error).message}`);
    }
    await unlink(path).catch(() => undefined);
  }
  if (out.done.length || out.dropped.length) log.info({ dir, replayed: out.done.length, dropped: out.dropped.length }, 'replayed the CNI DEL queue');
  return out;
}
