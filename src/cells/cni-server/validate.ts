/**
 * The CNI variables, checked before anything is done (the agent is authoritative; the shim repeats
 * the cheap checks in cni-shim/validate.c with the same rules and words). Every failure is code 7
 * with a message naming the variable, the offending value (quoted, escaped, shortened) and the fix:
 *
 * - CNI_IFNAME: 1–15 bytes of `A-Z a-z 0-9 _ . -`, starting with a letter or a digit. Stricter
 *   than the kernel's dev_valid_name (which refuses only "", ".", "..", "/", ":" and whitespace):
 *   no shell or format characters (`;`, `%`, `$`), no option-like leading `-`, nothing outside
 *   ASCII (a right-to-left override or a homoglyph would make `ip link` lie to the operator).
 * - CNI_CONTAINERID: libcni's `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`, at most 128 characters (twice a
 *   64-hex container id; keeps the DEL queue file name under NAME_MAX).
 * - CNI_NETNS: an absolute path without control characters, at most 4095 bytes. ADD and CHECK
 *   also probe it (validate-target.ts): a network namespace, not the agent's own.
 * - CNI_ARGS: `KEY=VALUE` pairs separated by `;` (empty pairs ignored), exactly one `=` per pair
 *   (libcni's rule), no control characters; the K8S_* values Cellium uses follow their own rules.
 * - CNI_PATH: no control characters.
 */
import { CniErrorCode, type CniRequest } from '../../cni/protocol.js';
import { CniFailure, invalidEnv, quoteValue } from './errors.js';

/** The kernel's limit on an interface name (IFNAMSIZ - 1). */
export const IFNAME_MAX_BYTES = 15;
/** Cellium's limit on a container id. */
export const CONTAINER_ID_MAX = 128;
/** The longest CNI_NETNS path (PATH_MAX - 1). */
export const NETNS_PATH_MAX = 4095;

/** How to write an interface name, as every CNI_IFNAME message says it. */
export const IFNAME_FIX = 'use 1-15 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit';
/** How to write a container id. */
export const CONTAINER_ID_FIX = `use 1-${CONTAINER_ID_MAX} characters of A-Z a-z 0-9 _ . -, starting with a letter or digit, as libcni requires`;
/** What CNI_NETNS must name. */
export const NETNS_FIX = "pass the path of the pod's network namespace, e.g. /var/run/netns/NAME or /proc/PID/ns/net";
/** How CNI_ARGS is written. */
export const ARGS_FIX = 'CNI_ARGS is KEY=VALUE pairs separated by ";", e.g. IgnoreUnknown=1;K8S_POD_NAME=web';

const NAME_CHAR = /^[A-Za-z0-9_.-]$/;
const ALNUM = /^[A-Za-z0-9]$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/u;

/** One character as a message names it: `";"`, `a space`, `U+202E`. */
function describeChar(c: string): string {
  const cp = c.codePointAt(0)!;
  if (c === ' ') return 'a space';
  if (cp < 0x20 || cp === 0x7f) return `the control character U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  if (cp > 0x7e) return `the non-ASCII character U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  return `"${c}"`;
}

/** Why a name of [A-Za-z0-9_.-] starting with a letter or digit is not one, or undefined. */
function nameProblem(v: string): string | undefined {
  for (const c of v) if (!NAME_CHAR.test(c)) return `contains ${describeChar(c)}`;
  if (!ALNUM.test(v[0]!)) return `starts with "${v[0]}"`;
  return undefined;
}

/** Why `v` is not an acceptable CNI_IFNAME, or undefined when it is. */
export function ifNameProblem(v: string): string | undefined {
  if (v === '') return 'is empty';
  const bytes = Buffer.byteLength(v);
  if (bytes > IFNAME_MAX_BYTES) return `is ${bytes} bytes long, the kernel allows at most ${IFNAME_MAX_BYTES}`;
  if (v === '.' || v === '..') return 'is "." or "..", which the kernel refuses';
  return nameProblem(v);
}

/** Why `v` is not an acceptable CNI_CONTAINERID, or undefined when it is. */
export function containerIdProblem(v: string): string | undefined {
  if (v === '') return 'is empty';
  const chars = [...v].length;
  if (chars > CONTAINER_ID_MAX) return `is ${chars} characters long, at most ${CONTAINER_ID_MAX} are allowed`;
  return nameProblem(v);
}

/** Why `v` is not an acceptable CNI_NETNS path (syntax only), or undefined when it is. */
export function netnsPathProblem(v: string): string | undefined {
  if (!v.startsWith('/')) return 'is not an absolute path';
  const bytes = Buffer.byteLength(v);
  if (bytes > NETNS_PATH_MAX) return `is ${bytes} bytes long, at most ${NETNS_PATH_MAX} are allowed`;
  const bad = CONTROL.exec(v);
  if (bad) return `contains ${describeChar(bad[0])}`;
  return undefined;
}

/** Why `v` is not an acceptable CNI_ARGS text (syntax), or undefined when it is. */
export function argsProblem(v: string): string | undefined {
  const bad = CONTROL.exec(v);
  if (bad) return `contains ${describeChar(bad[0])}`;
  for (const pair of v.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) return `has the pair ${quoteValue(pair)} without "="`;
    if (eq === 0) return `has the pair ${quoteValue(pair)} without a key`;
    if (pair.indexOf('=', eq + 1) >= 0) return `has the pair ${quoteValue(pair)} with more than one "="`;
  }
  return undefined;
}

/** The CNI_ARGS keys Cellium reads and the rule each value follows (pod names: Kubernetes' and podman's). */
const ARG_RULES: Readonly<Record<string, { max: number; what: string }>> = {
  K8S_POD_NAMESPACE: { max: 63, what: 'a namespace name' },
  K8S_POD_NAME: { max: 253, what: 'a pod name' },
  K8S_POD_UID: { max: 128, what: 'a pod UID' },
  K8S_POD_INFRA_CONTAINER_ID: { max: CONTAINER_ID_MAX, what: 'a container id' },
};

/** Why the value of a CNI_ARGS key Cellium uses is not acceptable, or undefined (unknown keys: undefined). */
export function argValueProblem(key: string, value: string): string | undefined {
  const rule = ARG_RULES[key];
  if (!rule || value === '') return undefined;
  const chars = [...value].length;
  const why = chars > rule.max ? `is ${chars} characters long` : nameProblem(value);
  return why && `${key}=${quoteValue(value)} ${why} (${rule.what} is 1-${rule.max} characters of A-Z a-z 0-9 _ . -, starting with a letter or digit)`;
}

/** The variables each command needs (the others may be empty). */
function needed(command: CniRequest['command']): ReadonlyArray<'containerId' | 'netns' | 'ifName'> {
  if (command === 'ADD' || command === 'CHECK') return ['containerId', 'netns', 'ifName'];
  return command === 'DEL' ? ['containerId', 'ifName'] : [];
}

const VARIABLE = { containerId: 'CNI_CONTAINERID', netns: 'CNI_NETNS', ifName: 'CNI_IFNAME' } as const;

/**
 * Checks the variables of a request (their syntax; the namespace itself is probed by
 * validate-target.ts); throws the code-7 CniFailure naming the first bad variable. STATUS and GC
 * use none of them and ignore them.
 */
export function validateEnv(req: CniRequest): void {
  const needs = needed(req.command);
  if (needs.length === 0) return;
  const missing = needs.filter((k) => req[k] === '').map((k) => VARIABLE[k]);
  if (missing.length) {
    throw new CniFailure(CniErrorCode.InvalidEnv, `required env variables [${missing.join(' ')}] missing`, `${req.command} needs ${needs.map((k) => VARIABLE[k]).join(', ')}: run the plugin from a container runtime`);
  }
  const id = containerIdProblem(req.containerId);
  if (id) throw invalidEnv('CNI_CONTAINERID', `${quoteValue(req.containerId)} ${id}`, CONTAINER_ID_FIX);
  const ifName = ifNameProblem(req.ifName);
  if (ifName) throw invalidEnv('CNI_IFNAME', `${quoteValue(req.ifName)} ${ifName}`, IFNAME_FIX);
  const netns = req.netns === '' ? undefined : netnsPathProblem(req.netns);
  if (netns) throw invalidEnv('CNI_NETNS', `${quoteValue(req.netns)} ${netns}`, NETNS_FIX);
  const args = argsProblem(req.args);
  if (args) throw invalidEnv('CNI_ARGS', args, ARGS_FIX);
  const path = CONTROL.exec(req.path);
  if (path) throw invalidEnv('CNI_PATH', `${quoteValue(req.path)} contains ${describeChar(path[0])}`, 'CNI_PATH is a ":"-separated list of directories');
}
