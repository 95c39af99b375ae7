/**
 * Running a delegated IPAM plugin (`--ipam=delegated-plugin`, as cilium-cni's
 * allocateIPsWithDelegatedPlugin; the address source that uses it is delegated-source.ts, GC's use
 * delegated-gc.ts): the addresses come from the IPAM plugin the netconf's `ipam` section names
 * (host-local, whereabouts, a cloud's), run the CNI way: the executable `ipam.type` found in
 * CNI_PATH, the call's own CNI_* variables with the command, the netconf on stdin, a bounded time,
 * stdout parsed as a CNI result (or a CNI error, whose code and message are carried through).
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { CniErrorCode } from '../../cni/protocol.js';
import { CniFailure, invalidConfig, quoteValue } from './errors.js';
import type { ParsedCall } from './netconf.js';
import { parseResult, type CniResultModel } from './result.js';

/** How long one IPAM plugin call may take. */
export const IPAM_PLUGIN_TIMEOUT_MS = 30_000;
/** The most a plugin may print (a result is a few hundred bytes). */
const MAX_OUTPUT = 1 << 20;
/** A plugin type is a plain file name: no path, no `..`, no hidden file. */
const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/** The `ipam` section of a netconf: its plugin type (checked), or undefined when there is none. */
export function ipamPluginType(stdin: string): string | undefined {
  const ipam = (JSON.parse(stdin) as Record<string, unknown>).ipam;
  if (ipam === undefined) return undefined;
  if (ipam === null || typeof ipam !== 'object' || Array.isArray(ipam)) throw invalidConfig('ipam', 'must be an object naming the IPAM plugin in "type"');
  const type = (ipam as Record<string, unknown>).type;
  if (typeof type !== 'string' || type === '') throw invalidConfig('ipam.type', 'is required: the IPAM plugin to run (e.g. "host-local")');
  if (!PLUGIN_NAME.test(type) || type.includes('..')) {
    throw invalidConfig('ipam.type', `${quoteValue(type)} is not a plugin name: give the file name of a plugin in CNI_PATH, never a path`);
  }
  return type;
}

/** The plugin's executable: the first regular, executable `type` in the absolute CNI_PATH directories (else code 7 naming ipam.type). */
export function findPlugin(type: string, cniPath: string): string {
  const entries = cniPath.split(delimiter).filter(Boolean);
  // a relative entry means the runtime's working directory, which the agent does not share: never searched
  const relative = entries.filter((dir) => !isAbsolute(dir));
  for (const dir of entries.filter((d) => isAbsolute(d))) {
    const file = join(dir, type);
    try {
      if (statSync(file).isFile()) {
        accessSync(file, constants.X_OK);
        return file;
      }
    } catch {
      // not in this directory
    }
  }
  const skipped = relative.length ? `; relative entries such as ${quoteValue(relative[0]!)} are not searched: give absolute directories` : '';
  throw invalidConfig('ipam.type', `${quoteValue(type)}: no such plugin in CNI_PATH ${quoteValue(cniPath)} (install it there, or fix the name${skipped})`);
}

/** Turns a plugin's failure into the CNI error it reported (code and message), else an I/O failure. */
function pluginFailure(type: string, command: string, stdout: string, stderr: string, err: Error & { killed?: boolean; code?: unknown }): CniFailure {
  if (err.killed) return new CniFailure(CniErrorCode.IoFailure, `IPAM plugin ${type} ${command} did not finish within ${IPAM_PLUGIN_TIMEOUT_MS} ms`);
  try {
    const e = JSON.parse(stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    if (typeof e.code === 'number' && typeof e.msg === 'string') {
      return new CniFailure(e.code, `IPAM plugin ${type} ${command}: ${e.msg}`, typeof e.details === 'string' ? e.details : '');
    }
  } catch {
    // not a CNI error result
  }
  const why = stderr.trim() || stdout.trim() || err.message;
  return new CniFailure(CniErrorCode.IoFailure, `IPAM plugin ${type} ${command} failed: ${why.slice(0, 500)}`);
}

/** Runs the IPAM plugin for `command` with `stdin`; resolves with its stdout, rejects with a {@link CniFailure}. */
export function runIpamPlugin(type: string, command: 'ADD' | 'DEL' | 'CHECK' | 'GC' | 'VERSION', call: ParsedCall, stdin: string): Promise<string> {
  const { req } = call;
  const file = findPlugin(type, req.path);
  const env = {
    CNI_COMMAND: command,
    CNI_CONTAINERID: req.containerId,
    CNI_NETNS: req.netns,
    CNI_IFNAME: req.ifName,
    CNI_ARGS: req.args,
    CNI_PATH: req.path,
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
  };
  return new Promise((resolve, reject) => {
    const child = execFile(file, [], { env, timeout: IPAM_PLUGIN_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: MAX_OUTPUT, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(pluginFailure(type, command, stdout, stderr, err));
      else resolve(stdout);
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(stdin);
  });
}

/** IPAM ADD: the plugin's addresses, routes and DNS. */
export async function delegatedAdd(type: string, call: ParsedCall): Promise<CniResultModel> {
  const out = await runIpamPlugin(type, 'ADD', call, call.req.stdin);
  try {
    const result = parseResult(JSON.parse(out));
    if (result.ips.length === 0) throw new Error('it has no IP');
    return result;
  } catch (err) {
    throw new CniFailure(CniErrorCode.IoFailure, `IPAM plugin ${type} ADD printed an unusable result: ${(err as Error).message}`, out.slice(0, 500));
  }
}

/** IPAM DEL (idempotent in every plugin the spec describes). */
export async function delegatedDel(type: string, call: ParsedCall): Promise<void> {
  await runIpamPlugin(type, 'DEL', call, call.req.stdin);
}

/** IPAM CHECK (CNI 0.4.0 and later; an earlier version has no CHECK). */
export async function delegatedCheck(type: string, call: ParsedCall): Promise<void> {
  if (call.conf.cniVersion === '0.3.1') return;
  await runIpamPlugin(type, 'CHECK', call, call.req.stdin);
}

/** The CNI versions the plugin says it supports (its VERSION answer), oldest first; [] when it answers nothing usable. */
export async function pluginVersions(type: string, call: ParsedCall): Promise<string[]> {
  const out = await runIpamPlugin(type, 'VERSION', call, JSON.stringify({ cniVersion: call.conf.cniVersion }));
  try {
    const v = (JSON.parse(out) as { supportedVersions?: unknown }).supportedVersions;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && /^\d+\.\d+\.\d+$/.test(x)).sort(versionOrder) : [];
  } catch {
    return [];
  }
}

/** Numeric order of CNI versions ("0.4.0" < "1.0.0" < "1.1.0"). */
export function versionOrder(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}
