/**
 * Cilium's etcd configuration file (`--kvstore-opt=etcd.config=FILE`): YAML with `endpoints` and,
 * for TLS, `trusted-ca-file`, `cert-file` and `key-file`. Read once at start; every error names
 * the field. Shared by the kvstore cell (which throws its own errors) and `cellium kvstore get`.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/** What is wrong with an etcd config file: the file, the field, why, and what the file must hold. */
export function etcdConfigProblem(file: string, field: string, why: string): string {
  return `etcd config ${file}: ${field}: ${why} (the file is Cilium's etcd YAML: endpoints: [https://host:2379], trusted-ca-file, cert-file, key-file)`;
}

/** A bad etcd config file (the message from etcdConfigProblem). */
export class EtcdConfigError extends Error {
  override readonly name = 'EtcdConfigError';
}

/** Builds the error a bad field raises. */
export type EtcdConfigFailure = (file: string, field: string, why: string) => Error;

const etcdConfigError: EtcdConfigFailure = (file, field, why) => new EtcdConfigError(etcdConfigProblem(file, field, why));

/** The parsed file, with the TLS files' contents. */
export interface EtcdConfig {
  readonly file: string;
  readonly endpoints: readonly string[];
  readonly tls?: {
    readonly ca: Buffer;
    readonly cert?: Buffer;
    readonly key?: Buffer;
  };
}

const KNOWN = new Set(['endpoints', 'trusted-ca-file', 'cert-file', 'key-file', 'ca-file']);

function readPem(file: string, field: string, path: unknown, badEtcdConfig: EtcdConfigFailure): Buffer {
  if (typeof path !== 'string' || path === '') throw badEtcdConfig(file, field, 'expected a file path');
  try {
    return readFileSync(path);
  } catch (err) {
    throw badEtcdConfig(file, field, `cannot read ${path}: ${(err as Error).message}`);
  }
}

/** Reads and checks an etcd config file; a bad one throws the error `badEtcdConfig` builds (EtcdConfigError by default). */
export function readEtcdConfig(file: string, badEtcdConfig: EtcdConfigFailure = etcdConfigError): EtcdConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw badEtcdConfig(file, 'file', `cannot read it: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw badEtcdConfig(file, 'file', `not YAML: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw badEtcdConfig(file, 'file', 'expected a YAML mapping');
  const d = doc as Record<string, unknown>;
  for (const k of Object.keys(d)) if (!KNOWN.has(k)) throw badEtcdConfig(file, k, `unknown field: known are ${[...KNOWN].join(', ')}`);
  const eps = typeof d.endpoints === 'string' ? [d.endpoints] : d.endpoints;
  if (!Array.isArray(eps) || eps.length === 0 || !eps.every((e) => typeof e === 'string')) throw badEtcdConfig(file, 'endpoints', 'expected a list of URLs, e.g. [https://127.0.0.1:2379]');
  const endpoints = eps.map((e: string) => {
    let u: URL;
    try {
      u = new URL(e);
    } catch {
      throw badEtcdConfig(file, 'endpoints', `"${e}" is not a URL: write http://host:port or https://host:port`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw badEtcdConfig(file, 'endpoints', `"${e}": expected http:// or https://`);
    if (!u.port) throw badEtcdConfig(file, 'endpoints', `"${e}": give the port (etcd's is 2379)`);
    return `${u.protocol}//${u.host}`;
  });
  const caField = d['trusted-ca-file'] !== undefined ? 'trusted-ca-file' : d['ca-file'] !== undefined ? 'ca-file' : undefined;
  const https = endpoints.some((e) => e.startsWith('https:'));
  if (!caField) {
    if (d['cert-file'] !== undefined || d['key-file'] !== undefined) throw badEtcdConfig(file, 'trusted-ca-file', 'cert-file and key-file need trusted-ca-file (the CA that signed etcd\'s certificate)');
    if (https) throw badEtcdConfig(file, 'trusted-ca-file', 'https endpoints need trusted-ca-file (the CA that signed etcd\'s certificate)');
    return { file, endpoints };
  }
  if (endpoints.some((e) => e.startsWith('http:'))) throw badEtcdConfig(file, 'endpoints', 'with TLS files every endpoint must be https://');
  if ((d['cert-file'] === undefined) !== (d['key-file'] === undefined)) throw badEtcdConfig(file, d['cert-file'] === undefined ? 'cert-file' : 'key-file', 'cert-file and key-file go together: give both or neither');
  return {
    file,
    endpoints,
    tls: {
      ca: readPem(file, caField, d[caField], badEtcdConfig),
      ...(d['cert-file'] !== undefined ? { cert: readPem(file, 'cert-file', d['cert-file'], badEtcdConfig), key: readPem(file, 'key-file', d['key-file'], badEtcdConfig) } : {}),
    },
  };
}
