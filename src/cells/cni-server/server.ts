/**
 * The CNI server: runs one forwarded CNI command (ADD, DEL, CHECK, STATUS, GC) and answers with
 * what the shim prints and its exit code. Commands on one attachment run one at a time; failures
 * become CNI error results whose code follows the spec (and Cellium's own codes from 100 up). The
 * server is ready once the DEL queue was replayed at start; before that the route answers 503.
 */
import { CniErrorCode, cniEmptySuccess, cniError, cniSuccess, replyCniVersion, type CniRequest, type CniResponse } from '../../cni/protocol.js';
import { runAdd } from './add.js';
import { runCheck } from './check.js';
import { attachmentSource, configuredSource } from './choose-source.js';
import type { CniDeps } from './deps.js';
import { replayDeleteQueue, type ReplayOutcome } from './delete-queue.js';
import { CniFailure, asCniFailure, quoteValue } from './errors.js';
import { runGc } from './gc.js';
import { attachmentKey } from './ledger.js';
import { parseCall } from './netconf.js';
import { removeOrphans, type OrphanOutcome } from './orphans.js';
import { formatResult } from './result.js';
import { checkNetns } from './validate-target.js';

/** The cniVersion to answer an error with: the request's when it can be read. */
function versionOf(stdin: string): string {
  try {
    return replyCniVersion((JSON.parse(stdin) as { cniVersion?: unknown })?.cniVersion);
  } catch {
    return replyCniVersion(undefined);
  }
}

/** Runs CNI commands. */
export class CniServer {
  private readyFlag = false;
  private markReady!: () => void;
  private readonly readyPromise = new Promise<void>((r) => (this.markReady = r));

  constructor(private readonly d: CniDeps) {}

  /** Settles once the server became ready for the first time. */
  whenReady(): Promise<void> {
    return this.readyPromise;
  }

  /** Whether commands are served (false until started, and after stop). */
  get ready(): boolean {
    return this.readyFlag;
  }

  /** Marks the server ready or not (the cell does this at start and stop). */
  setReady(ready: boolean): void {
    this.readyFlag = ready;
    if (ready) this.markReady();
  }

  /** Runs one command; never throws: every failure is a CNI error answer. */
  async handle(req: CniRequest, signal?: AbortSignal): Promise<CniResponse> {
    const began = performance.now();
    try {
      const out = await this.dispatch(req, signal);
      this.d.log.debug({ command: req.command, containerID: req.containerId, ms: Math.round(performance.now() - began) }, 'CNI command done');
      return out;
    } catch (err) {
      const f = asCniFailure(err);
      // the variables may be hostile (10,000 characters, newlines): the log gets them shortened and escaped
      this.d.log.warn({ command: req.command, containerID: quoteValue(req.containerId), ifName: quoteValue(req.ifName), code: f.code, err: f.message }, 'CNI command failed');
      return cniError(versionOf(req.stdin), f.code, f.message, f.details);
    }
  }

  private async dispatch(req: CniRequest, signal?: AbortSignal): Promise<CniResponse> {
    const call = parseCall(req);
    const d = this.d;
    if (req.command === 'ADD' || req.command === 'CHECK') await checkNetns(d.net, req.netns);
    const key = attachmentKey(req.containerId, req.ifName);
    switch (req.command) {
      case 'ADD': {
        const result = await d.ledger.withLock(key, () => runAdd(d, call, signal));
        return cniSuccess(formatResult(result, call.conf.cniVersion));
      }
      case 'DEL':
        // through the source that gave the addresses (a delegated plugin releases after the interface is gone)
        await d.ledger.withLock(key, () => attachmentSource(d, call).remove('CNI DEL'));
        return cniEmptySuccess();
      case 'CHECK': {
        const source = configuredSource(d, call);
        source.prepare();
        await d.ledger.withLock(key, async () => {
          await runCheck(d, call);
          await source.check();
        });
        return cniEmptySuccess();
      }
      case 'STATUS':
        if (!this.ready) throw new CniFailure(CniErrorCode.PluginNotAvailable, 'the cellium agent is not ready');
        return cniEmptySuccess();
      case 'GC':
        await runGc(d, call);
        return cniEmptySuccess();
    }
  }

  /** Removes the journalled host interfaces no endpoint holds and no command is working on (at start). */
  async removeOrphans(reason: string): Promise<OrphanOutcome> {
    const out = await removeOrphans(this.d, reason);
    if (out.interfaces.length) this.d.log.info({ interfaces: out.interfaces.length, ips: out.ips.length, reason }, 'CNI: removed host interfaces no endpoint holds');
    return out;
  }

  /** Replays the DEL queue directory (at start). */
  replayDeleteQueue(dir: string): Promise<ReplayOutcome> {
    return replayDeleteQueue(dir, (req) => this.handle(req), this.d.log);
  }
}
