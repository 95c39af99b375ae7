// The table of hostile CNI calls (variables and stdin) with the code and message each must get.
// The same table drives the CNI server over a FakeNet (unprivileged, test/cni-server/validate.test.ts)
// and the real shim against a real agent running in a network namespace of its own
// (test/root-e2e/hostile-cni.test.ts), so the agent's checks and the shim's are held to the same answers.
import type { CniRequest } from '../../src/cni/protocol.js';

/** Where a table runs: the paths it needs. */
export interface HostileContext {
  /** A pod network namespace that exists (and holds only `lo`). */
  readonly pod: string;
  /** The agent's own network namespace, as a path. */
  readonly own: string;
  /** A path that does not exist. */
  readonly missing: string;
  /** A FIFO (opening it would block). */
  readonly fifo: string;
  /** A directory of namespaces (not one). */
  readonly dir: string;
  /** The netconf text, with `extra` keys, in `version`. */
  netconf(extra?: Record<string, unknown>, version?: string): string;
}

/** One hostile call and what it must get. */
export interface HostileCase {
  readonly name: string;
  readonly command: CniRequest['command'];
  /** The request: the defaults (a valid ADD into `pod`) with these fields replaced. */
  readonly req: Partial<Omit<CniRequest, 'command'>>;
  readonly code: number;
  /** A fragment both the shim's and the agent's message contain. */
  readonly msg: RegExp;
  /** Only the shim sees it (the agent's contract cannot carry it: an unknown CNI_COMMAND). */
  readonly shimOnly?: boolean;
  /** Only an agent behind its API server can answer it (a body over --api-max-body-bytes). */
  readonly needsApiServer?: boolean;
  /** The shim forwards it: only the agent can tell (the pod's interfaces, its own namespace, CNI_ARGS keys, the netconf's keys). */
  readonly agentDecides?: boolean;
}

/** A valid ADD into the context's pod namespace, with `over` applied. */
export function baseRequest(ctx: HostileContext, command: CniRequest['command'], over: Partial<Omit<CniRequest, 'command'>> = {}): CniRequest {
  return {
    command,
    containerId: 'hostile-0',
    netns: ctx.pod,
    ifName: 'eth0',
    args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=hostile;K8S_POD_NAME=web-0',
    path: '/opt/cni/bin',
    stdin: ctx.netconf(),
    ...over,
  };
}

const IFNAME = /invalid CNI_IFNAME/;
const CID = /invalid CNI_CONTAINERID/;
const AGENT = { agentDecides: true } as const;
/** Code 7 for an invalid variable, as the issue asks (the spec's 4 is unused), and for an invalid netconf (the spec's 7). */
const INVALID = 7;

/** Every hostile case, with its expected code and message fragment. */
export function hostileCases(ctx: HostileContext): HostileCase[] {
  const add = (name: string, req: HostileCase['req'], code: number, msg: RegExp, more: Partial<HostileCase> = {}): HostileCase => ({ name, command: 'ADD', req, code, msg, ...more });
  return [
    // CNI_IFNAME: the values, then more
    add('CNI_IFNAME "."', { ifName: '.' }, INVALID, /CNI_IFNAME: "\." is "\." or "\.\."/),
    add('CNI_IFNAME ".."', { ifName: '..' }, INVALID, /CNI_IFNAME: "\.\." is "\." or "\.\."/),
    add('CNI_IFNAME "lo" (exists in the pod)', { ifName: 'lo' }, INVALID, /CNI_IFNAME: "lo" already exists/, AGENT),
    add('CNI_IFNAME "%s%n"', { ifName: '%s%n' }, INVALID, /CNI_IFNAME: "%s%n" contains "%"/),
    add('CNI_IFNAME "eth0;id"', { ifName: 'eth0;id' }, INVALID, /CNI_IFNAME: "eth0;id" contains ";"/),
    add('CNI_IFNAME "-rf"', { ifName: '-rf' }, INVALID, /CNI_IFNAME: "-rf" starts with "-"/),
    add('CNI_IFNAME with a right-to-left override', { ifName: 'eth0\u202e1' }, INVALID, /CNI_IFNAME: .* contains the non-ASCII/),
    add('CNI_IFNAME of 16 bytes', { ifName: 'a'.repeat(16) }, INVALID, /CNI_IFNAME: .* is 16 bytes long, the kernel allows at most 15/),
    add('CNI_IFNAME of 300 bytes', { ifName: 'a'.repeat(300) }, INVALID, /CNI_IFNAME: .* is 300 bytes long/),
    add('CNI_IFNAME empty', { ifName: '' }, INVALID, /required env variables \[CNI_IFNAME\] missing/),
    add('CNI_IFNAME with a slash', { ifName: 'a/b' }, INVALID, /CNI_IFNAME: "a\/b" contains "\/"/),
    add('CNI_IFNAME with a colon (an alias)', { ifName: 'eth0:1' }, INVALID, /CNI_IFNAME: "eth0:1" contains ":"/),
    add('CNI_IFNAME with a space', { ifName: 'eth 0' }, INVALID, /CNI_IFNAME: "eth 0" contains a space/),
    add('CNI_IFNAME with a newline', { ifName: 'eth0\n' }, INVALID, /CNI_IFNAME: .* contains the control character/),
    add('CNI_IFNAME "$(id)"', { ifName: '$(id)' }, INVALID, /CNI_IFNAME: "\$\(id\)" contains "\$"/),
    add('CNI_IFNAME with a Cyrillic homoglyph', { ifName: '\u0435th0' }, INVALID, /CNI_IFNAME: .* contains the non-ASCII/),
    add('CNI_IFNAME with a zero-width space', { ifName: 'eth\u200b0' }, INVALID, /CNI_IFNAME: .* contains the non-ASCII/),
    add('CNI_IFNAME "@" (ip link would print it as a link)', { ifName: 'eth0@if2' }, INVALID, /CNI_IFNAME: "eth0@if2" contains "@"/),
    // CNI_CONTAINERID
    add('CNI_CONTAINERID "../../etc/passwd"', { containerId: '../../etc/passwd' }, INVALID, /CNI_CONTAINERID: "\.\.\/\.\.\/etc\/passwd" contains "\/"/),
    add('CNI_CONTAINERID "$(id)"', { containerId: '$(id)' }, INVALID, /CNI_CONTAINERID: "\$\(id\)" contains "\$"/),
    add('CNI_CONTAINERID with a newline', { containerId: 'abc\ndef' }, INVALID, /CNI_CONTAINERID: .* contains the control character/),
    add('CNI_CONTAINERID of 10,000 characters', { containerId: 'a'.repeat(10_000) }, INVALID, /CNI_CONTAINERID: "a{64}\.\.\." \(10000 (characters|bytes)\) is 10000 characters long, at most 128/),
    add('CNI_CONTAINERID of 129 characters', { containerId: 'b'.repeat(129) }, INVALID, /CNI_CONTAINERID: .* is 129 characters long/),
    add('CNI_CONTAINERID starting with "-"', { containerId: '-rf' }, INVALID, /CNI_CONTAINERID: "-rf" starts with "-"/),
    add('CNI_CONTAINERID starting with "."', { containerId: '.hidden' }, INVALID, /CNI_CONTAINERID: "\.hidden" starts with "\."/),
    add('CNI_CONTAINERID with ";"', { containerId: 'abc;reboot' }, INVALID, /CNI_CONTAINERID: "abc;reboot" contains ";"/),
    add('CNI_CONTAINERID empty', { containerId: '' }, INVALID, /required env variables \[CNI_CONTAINERID\] missing/),
    // CNI_NETNS
    add('CNI_NETNS /etc/passwd', { netns: '/etc/passwd' }, INVALID, /CNI_NETNS: "\/etc\/passwd" is not a network namespace: it is a regular file/),
    add('CNI_NETNS /', { netns: '/' }, INVALID, /CNI_NETNS: "\/" is not a network namespace: it is a directory/),
    add('CNI_NETNS /dev/null', { netns: '/dev/null' }, INVALID, /CNI_NETNS: "\/dev\/null" is not a network namespace: it is a character device/),
    add('CNI_NETNS missing', { netns: ctx.missing }, INVALID, /CNI_NETNS: ".*" does not exist/),
    add("CNI_NETNS the agent's own namespace", { netns: ctx.own }, INVALID, /CNI_NETNS: ".*" is the cellium agent's own network namespace/, AGENT),
    add('CNI_NETNS a FIFO (never opened)', { netns: ctx.fifo }, INVALID, /CNI_NETNS: ".*" is not a network namespace: it is a FIFO/),
    add('CNI_NETNS a directory of namespaces', { netns: ctx.dir }, INVALID, /CNI_NETNS: ".*" is not a network namespace: it is a directory/),
    add('CNI_NETNS relative', { netns: 'var/run/netns/x' }, INVALID, /CNI_NETNS: "var\/run\/netns\/x" is not an absolute path/),
    add('CNI_NETNS with a newline', { netns: `${ctx.pod}\n` }, INVALID, /CNI_NETNS: .* contains the control character/),
    add('CNI_NETNS empty on ADD', { netns: '' }, INVALID, /required env variables \[CNI_NETNS\] missing/),
    { name: "CHECK in the agent's own namespace", command: 'CHECK', req: { netns: ctx.own, stdin: ctx.netconf({ prevResult: { interfaces: [], ips: [] } }) }, code: INVALID, msg: /CNI_NETNS: ".*" is the cellium agent's own network namespace/, ...AGENT },
    { name: 'DEL with "../../etc/passwd"', command: 'DEL', req: { containerId: '../../etc/passwd' }, code: INVALID, msg: CID },
    { name: 'DEL with CNI_IFNAME "eth0;id"', command: 'DEL', req: { ifName: 'eth0;id' }, code: INVALID, msg: IFNAME },
    // CNI_ARGS, CNI_PATH, CNI_COMMAND
    add('CNI_ARGS pair without "="', { args: 'IgnoreUnknown' }, INVALID, /CNI_ARGS: has the pair "IgnoreUnknown" without "="/),
    add('CNI_ARGS pair without a key', { args: '=1' }, INVALID, /CNI_ARGS: has the pair "=1" without a key/),
    add('CNI_ARGS pair with two "="', { args: 'IgnoreUnknown=1;A=b=c' }, INVALID, /CNI_ARGS: has the pair "A=b=c" with more than one "="/),
    add('CNI_ARGS with a newline', { args: 'IgnoreUnknown=1\nK8S_POD_NAME=x' }, INVALID, /CNI_ARGS: contains the control character/),
    add('CNI_ARGS unknown key', { args: 'FOO=1' }, INVALID, /CNI_ARGS: the key "FOO" is unknown \(add IgnoreUnknown=1/, AGENT),
    add('K8S_POD_NAME "$(id)"', { args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=$(id)' }, INVALID, /CNI_ARGS: K8S_POD_NAME="\$\(id\)" contains "\$"/, AGENT),
    add('K8S_POD_NAMESPACE "../kube-system"', { args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=../kube-system;K8S_POD_NAME=p' }, INVALID, /CNI_ARGS: K8S_POD_NAMESPACE=".*" contains "\/"/, AGENT),
    add('K8S_POD_INFRA_CONTAINER_ID of 200 characters', { args: `IgnoreUnknown=1;K8S_POD_INFRA_CONTAINER_ID=${'c'.repeat(200)}` }, INVALID, /CNI_ARGS: K8S_POD_INFRA_CONTAINER_ID=.* is 200 characters long/, AGENT),
    add('CNI_PATH with a newline', { path: '/opt/cni/bin\n/tmp' }, INVALID, /invalid CNI_PATH: .* contains the control character/),
    { name: 'CNI_COMMAND unknown', command: 'FROB' as CniRequest['command'], req: {}, code: INVALID, msg: /invalid CNI_COMMAND: "FROB" is not a CNI command/, shimOnly: true },
    { name: 'CNI_COMMAND lower case', command: 'add' as CniRequest['command'], req: {}, code: INVALID, msg: /invalid CNI_COMMAND: "add"/, shimOnly: true },
    // stdin
    add('stdin not JSON', { stdin: '{"cniVersion":' }, 6, /./),
    add('stdin empty', { stdin: '' }, 6, /./),
    add('stdin a JSON array', { stdin: '[1,2]' }, 6, /./),
    add('stdin nested 10,000 deep', { stdin: `{"cniVersion":"1.0.0","name":"n","type":"t","x":${'['.repeat(10_000)}${']'.repeat(10_000)}}` }, 6, /./, { shimOnly: true }),
    add('stdin with a raw control character in a string', { stdin: '{"cniVersion":"1.0.0","name":"a\u0001","type":"t"}' }, 6, /./),
    add('cniVersion 0.2.0', { stdin: ctx.netconf({}, '0.2.0') }, 1, /./),
    add('cniVersion 99.0.0', { stdin: ctx.netconf({}, '99.0.0') }, 1, /./),
    add('cniVersion a number', { stdin: ctx.netconf({ cniVersion: 1 }) }, 1, /./),
    add('netconf without a name', { stdin: ctx.netconf({ name: undefined }) }, INVALID, /name/),
    add('netconf type not a string', { stdin: ctx.netconf({ type: 7 }) }, INVALID, /type/),
    add('netconf mtu 10', { stdin: ctx.netconf({ mtu: 10 }) }, INVALID, /mtu/, AGENT),
    add('netconf prevResult garbage', { stdin: ctx.netconf({ prevResult: { ips: [{ address: 'nope' }] } }) }, INVALID, /prevResult/, AGENT),
    add('netconf of 3 MiB (over the agent body limit)', { stdin: ctx.netconf({ padding: 'p'.repeat(3 << 20) }) }, INVALID, /network configuration too large: \d+ bytes, limit 2097152/, { needsApiServer: true, agentDecides: true }),
    add('netconf of 17 MiB (over the shim limit)', { stdin: ctx.netconf({ padding: 'p'.repeat(17 << 20) }) }, INVALID, /network configuration too large/, { shimOnly: true }),
    { name: 'STATUS with cniVersion 1.0.0', command: 'STATUS', req: { stdin: ctx.netconf({}, '1.0.0') }, code: 1, msg: /./, shimOnly: true },
  ];
}
