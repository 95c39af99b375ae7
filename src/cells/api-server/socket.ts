/**
 * The API's unix socket: parent directory created (0700 for the shared /tmp fallback, and refused
 * when another user owns it), a stale socket left by a dead agent replaced (nobody answers a
 * connect), a live one refused with SocketInUseError, mode 0660 once listening.
 */
import { chmodSync, lstatSync, mkdirSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { privateSocketDir } from '../../api/socket-path.js';
import { NotASocketError, SocketDirOwnerError, SocketInUseError } from './errors.js';

/** Whether a process accepts connections on the socket. */
export function socketIsLive(path: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ path });
    const done = (live: boolean): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(live);
    };
    const timer = setTimeout(() => done(true), timeoutMs);
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/**
 * Makes `path` ready to listen on: creates its directory, and removes a stale socket. Returns true
 * when a stale socket was removed. Throws SocketInUseError when an agent answers there.
 */
export async function prepareSocket(path: string): Promise<boolean> {
  const dir = dirname(path);
  const uid = process.getuid?.();
  mkdirSync(dir, { recursive: true, mode: uid !== undefined && dir === privateSocketDir(uid) ? 0o700 : 0o755 });
  // a directory of another user (e.g. /tmp/cellium-<uid> made first by someone else) could hold their socket
  const owner = lstatSync(dir).uid;
  if (uid !== undefined && owner !== uid && owner !== 0) throw new SocketDirOwnerError(dir, owner);
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  if (!st.isSocket()) throw new NotASocketError(path);
  if (await socketIsLive(path)) throw new SocketInUseError(path);
  unlinkSync(path);
  return true;
}

/** Sets the socket's mode (0660: owner and group may connect). */
export function restrictSocket(path: string, mode = 0o660): void {
  chmodSync(path, mode);
}

/** Removes the socket if it is still there. */
export function removeSocket(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
