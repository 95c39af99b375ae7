/**
 * The shape check of a stored endpoint (`ep_config.json`) before restore trusts it: every field
 * restore reads must have its type, so a damaged or hand-edited file stops the start naming the
 * field (as an unreadable one does) instead of failing deep inside restore, or restoring an
 * endpoint with labels that select other rules.
 */
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringArray = (v: unknown): boolean => Array.isArray(v) && v.every((s) => typeof s === 'string');
const isCount = (v: unknown, min: number): boolean => Number.isSafeInteger(v) && (v as number) >= min;
const isNamedPort = (v: unknown): boolean =>
  isObject(v) && typeof v.name === 'string' && isCount(v.port, 1) && (v.port as number) <= 65535 && isCount(v.protocol, 1) && (v.protocol as number) <= 255;

const SPEC_STRINGS = ['containerId', 'containerName', 'containerIfName', 'ipv4', 'ipv6', 'ipv4PoolName', 'ipv6PoolName', 'podName', 'namespace', 'k8sUid', 'netnsCookie'] as const;

/** The first problem of stored endpoint `id` (`/field: expected …`), or undefined when restore can use it. */
export function storedEndpointProblem(v: unknown, id: number): string | undefined {
  if (!isObject(v)) return 'expected a JSON object';
  if (v.version !== 1) return `/version: ${JSON.stringify(v.version)} is not supported (expected 1)`;
  if (v.id !== id) return `/id: ${JSON.stringify(v.id)} is not the directory's endpoint ID ${id}`;
  const spec = v.spec;
  if (!isObject(spec)) return '/spec: expected an object';
  if (typeof spec.ifName !== 'string' || !spec.ifName) return '/spec/ifName: expected the host interface name';
  if (!isCount(spec.ifIndex, 0)) return '/spec/ifIndex: expected an integer >= 0';
  for (const k of ['mac', 'hostMac'] as const) if (typeof spec[k] !== 'string') return `/spec/${k}: expected a string`;
  for (const k of SPEC_STRINGS) if (spec[k] !== undefined && typeof spec[k] !== 'string') return `/spec/${k}: expected a string`;
  for (const k of ['properties', 'datapathConfiguration'] as const) if (spec[k] !== undefined && !isObject(spec[k])) return `/spec/${k}: expected an object`;
  const labels = v.labels;
  if (!isObject(labels)) return '/labels: expected {"orchestration":[...],"user":[...]}';
  for (const k of ['orchestration', 'user'] as const) if (!isStringArray(labels[k])) return `/labels/${k}: expected an array of strings`;
  if (!isObject(v.options) || Object.values(v.options).some((o) => typeof o !== 'string')) return '/options: expected an object of strings';
  if (v.namedPorts !== undefined && !(Array.isArray(v.namedPorts) && v.namedPorts.every(isNamedPort))) return '/namedPorts: expected an array of {"name": string, "port": 1-65535, "protocol": number}';
  if (v.identity !== undefined && !isCount(v.identity, 1)) return '/identity: expected an integer >= 1';
  if (v.policyRevision !== undefined && !isCount(v.policyRevision, 1)) return '/policyRevision: expected an integer >= 1';
  if (v.datapathHash !== undefined && typeof v.datapathHash !== 'string') return '/datapathHash: expected a string';
  return undefined;
}
