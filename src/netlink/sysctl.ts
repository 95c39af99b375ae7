/**
 * Sysctls of the agent's own network namespace, read and written straight through /proc/sys
 * (for another namespace use Netlink.writeSysctl on a handle opened there).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NetlinkError, errnoName } from './errors.js';
import { sysctlPath } from './netlink.js';

function sysctlError(op: string, key: string, err: unknown): unknown {
  const e = err as NodeJS.ErrnoException;
  if (typeof e?.errno !== 'number') return err;
  const errno = Math.abs(e.errno);
  const code = e.code ?? errnoName(errno);
  return new NetlinkError(`${op} ${key}: ${code} (${e.message})`, op, '', errno, code, key);
}

/** Writes a sysctl of the agent's namespace (`net.ipv4.ip_forward` or `net/ipv4/conf/x.1/forwarding`). */
export async function writeSysctl(key: string, value: string | number): Promise<void> {
  try {
    await writeFile(join('/proc/sys', sysctlPath(key)), String(value));
  } catch (err) {
    throw sysctlError('writeSysctl', key, err);
  }
}

/** Reads a sysctl of the agent's namespace, trailing newline removed. */
export async function readSysctl(key: string): Promise<string> {
  try {
    return (await readFile(join('/proc/sys', sysctlPath(key)), 'utf8')).replace(/\n+$/, '');
  } catch (err) {
    throw sysctlError('readSysctl', key, err);
  }
}
