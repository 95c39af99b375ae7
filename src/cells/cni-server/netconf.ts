/**
 * Parsing one CNI call (as cilium-cni's ADD does with types.LoadNetConf and cniTypes.LoadArgs):
 * the network configuration from stdin (ajv-checked; errors name the key), CNI_ARGS (the K8S_POD_*
 * keys; an unknown key is refused unless `IgnoreUnknown` is set) and the variables (validate.ts).
 */
import { Ajv, type ErrorObject } from 'ajv';
import { CniErrorCode, SUPPORTED_CNI_VERSIONS, parseCniArgs, type CniRequest, type CniVersion } from '../../cni/protocol.js';
import { CniFailure, invalidConfig, invalidEnv, quoteValue } from './errors.js';
import { parseResult, type CniResultModel } from './result.js';
import { ARGS_FIX, argValueProblem, validateEnv } from './validate.js';

/** One entry of `cni.dev/valid-attachments` (CNI 1.1 GC). */
export interface Attachment {
  readonly containerID: string;
  readonly ifname: string;
}

/** The network configuration keys the CNI server uses. */
export interface NetConf {
  readonly cniVersion: CniVersion;
  readonly name: string;
  readonly type: string;
  /** MTU of the pod's interface (the agent's --cni-mtu when absent). */
  readonly mtu?: number;
  /** The result of the previous plugin (chaining), or the cached ADD result (DEL, CHECK). */
  readonly prevResult?: CniResultModel;
  /** GC: the attachments the runtime still uses. */
  readonly validAttachments?: readonly Attachment[];
}

/** CNI_ARGS as cilium-cni's ArgsSpec reads them. */
export interface CniArgs {
  readonly podNamespace?: string;
  readonly podName?: string;
  readonly podUid?: string;
  readonly infraContainerId?: string;
}

/** A call with everything parsed. */
export interface ParsedCall {
  readonly req: CniRequest;
  readonly conf: NetConf;
  readonly args: CniArgs;
}

const KNOWN_ARGS: Readonly<Record<string, keyof CniArgs | null>> = {
  IgnoreUnknown: null,
  K8S_POD_NAMESPACE: 'podNamespace',
  K8S_POD_NAME: 'podName',
  K8S_POD_UID: 'podUid',
  K8S_POD_INFRA_CONTAINER_ID: 'infraContainerId',
};

const confSchema = {
  type: 'object',
  required: ['cniVersion', 'name', 'type'],
  properties: {
    cniVersion: { enum: [...SUPPORTED_CNI_VERSIONS] },
    name: { type: 'string', minLength: 1 },
    type: { type: 'string', minLength: 1 },
    mtu: { type: 'integer', minimum: 576, maximum: 65535 },
    prevResult: { type: 'object' },
    'cni.dev/valid-attachments': {
      type: 'array',
      items: {
        type: 'object',
        required: ['containerID', 'ifname'],
        properties: { containerID: { type: 'string', minLength: 1 }, ifname: { type: 'string', minLength: 1 } },
      },
    },
  },
} as const;

const validateConf = new Ajv({ allErrors: false, strict: false }).compile(confSchema);

/** The key path of an ajv error, e.g. `cni.dev/valid-attachments[0].ifname`. */
function keyOf(e: ErrorObject): string {
  const parts = e.instancePath.split('/').slice(1).map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty));
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '') || '(root)';
}

/** Parses the network configuration text (stdin). */
export function parseNetConf(stdin: string): NetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(stdin);
  } catch (err) {
    throw new CniFailure(CniErrorCode.DecodingFailure, `network configuration is not JSON: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new CniFailure(CniErrorCode.DecodingFailure, 'network configuration is not a JSON object');
  }
  if (!validateConf(raw)) {
    const e = validateConf.errors![0]!;
    const key = keyOf(e);
    if (key === 'cniVersion') {
      throw new CniFailure(CniErrorCode.IncompatibleVersion, `incompatible CNI version: cniVersion must be one of ${SUPPORTED_CNI_VERSIONS.join(', ')}`);
    }
    throw invalidConfig(key, e.keyword === 'required' ? 'is required' : (e.message ?? 'is invalid'));
  }
  const obj = raw as unknown as Record<string, unknown>;
  let prevResult: CniResultModel | undefined;
  if (obj.prevResult !== undefined) {
    try {
      prevResult = parseResult(obj.prevResult);
    } catch (err) {
      throw invalidConfig('prevResult', (err as Error).message);
    }
  }
  return {
    cniVersion: obj.cniVersion as CniVersion,
    name: obj.name as string,
    type: obj.type as string,
    ...(obj.mtu !== undefined ? { mtu: obj.mtu as number } : {}),
    ...(prevResult ? { prevResult } : {}),
    ...(obj['cni.dev/valid-attachments'] !== undefined ? { validAttachments: obj['cni.dev/valid-attachments'] as Attachment[] } : {}),
  };
}

/**
 * Parses CNI_ARGS; an unknown key fails (code 7) unless IgnoreUnknown is set (1, true), and so
 * does a value of a K8S_* key Cellium uses that breaks its rule (validate.ts).
 */
export function parseArgs(text: string): CniArgs {
  let pairs: Map<string, string>;
  try {
    pairs = parseCniArgs(text);
  } catch (err) {
    throw invalidEnv('CNI_ARGS', (err as Error).message, ARGS_FIX);
  }
  const ignoreUnknown = /^(1|true)$/i.test(pairs.get('IgnoreUnknown') ?? '');
  const out: Record<string, string> = {};
  for (const [k, v] of pairs) {
    const field = KNOWN_ARGS[k];
    if (field === undefined) {
      if (!ignoreUnknown) throw invalidEnv('CNI_ARGS', `the key ${quoteValue(k)} is unknown`, 'add IgnoreUnknown=1 to ignore it');
      continue;
    }
    const bad = argValueProblem(k, v);
    if (bad) throw invalidEnv('CNI_ARGS', bad);
    if (field && v !== '') out[field] = v;
  }
  return out;
}

/** Parses a whole call: variables, netconf, CNI_ARGS. */
export function parseCall(req: CniRequest): ParsedCall {
  validateEnv(req);
  const conf = parseNetConf(req.stdin);
  return { req, conf, args: parseArgs(req.args) };
}
