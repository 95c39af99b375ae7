/**
 * Configuration of the kvstore cell, Cilium's flags: `--kvstore=etcd`, `--kvstore-opt=etcd.config=FILE`,
 * `--kvstore-lease-ttl`, and who this node is in the cluster (`--cluster-name`, `--node-name`,
 * `--node-ip`). Without `--kvstore` the agent is a single node with the embedded identity backend.
 */
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { duration, list, oneOf, string, type Field, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';
import { badFlag } from './errors.js';

/** Kvstore kinds: none (the default) or etcd. */
export const KVSTORE_KINDS = ['', 'etcd'] as const;

/** Options `--kvstore-opt` knows (Cilium's). */
export const KVSTORE_OPTS = ['etcd.config'] as const;

/** Cilium's node and cluster names: lowercase DNS-like labels. */
const NAME = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;

function checked(base: Field<string>, flag: string, check: (v: string) => string | undefined): Field<string> {
  return {
    ...base,
    parse(raw: unknown): string {
      const v = base.parse(raw).trim();
      const why = check(v);
      if (why) throw badFlag(flag, v, why);
      return v;
    },
  };
}

function kvstoreOpts(): Field<readonly string[]> {
  const base = list([], 'Kvstore options as key=value, comma-separated: etcd.config=FILE (Cilium\'s etcd YAML: endpoints, trusted-ca-file, cert-file, key-file)');
  return {
    ...base,
    parse(raw: unknown): readonly string[] {
      const opts = base.parse(raw);
      for (const o of opts) {
        const [k, v] = [o.slice(0, o.indexOf('=')), o.slice(o.indexOf('=') + 1)];
        if (!o.includes('=') || !v) throw badFlag('kvstore-opt', o, 'expected key=value, e.g. etcd.config=/etc/cellium/etcd.yaml');
        if (!(KVSTORE_OPTS as readonly string[]).includes(k)) throw badFlag('kvstore-opt', o, `unknown option "${k}": known are ${KVSTORE_OPTS.join(', ')}`);
      }
      return opts;
    },
  };
}

const nodeName = (hostname().toLowerCase().replace(/[^a-z0-9.-]/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '') || 'node').slice(0, 63);

/** Schema of the kvstore configuration. */
export const kvstoreConfigSchema = {
  kvstore: oneOf(KVSTORE_KINDS, '', 'Key-value store of the cluster: etcd (identities, ipcache and nodes shared through it), or empty for a single node'),
  kvstoreOpt: kvstoreOpts(),
  kvstoreLeaseTtl: {
    ...duration('15m', 'Time to live of the leases of this node\'s keys in the kvstore: after the agent dies, its keys are gone after this long'),
    parse(raw: unknown): number {
      const ms = duration('15m', '').parse(raw);
      if (ms < 2000) throw badFlag('kvstore-lease-ttl', String(raw), 'etcd leases last at least 2s: give 2s or more (Cilium\'s default is 15m)');
      return ms;
    },
  } satisfies Field<number>,
  clusterName: checked(string('default', 'Name of the cluster (the kvstore keys of this cluster)'), 'cluster-name', (v) =>
    NAME.test(v) ? undefined : 'expected a lowercase name of letters, digits, "-" and "." (e.g. default)'),
  nodeName: checked(string(nodeName, 'Name of this node in the cluster (defaults to the host name)'), 'node-name', (v) =>
    NAME.test(v) ? undefined : 'expected a lowercase name of letters, digits, "-" and "." (e.g. node-1)'),
  nodeIp: checked(string('', 'IPv4 address of this node that other nodes reach it at (empty: the first non-loopback IPv4 address)'), 'node-ip', (v) =>
    v === '' || isIP(v) === 4 ? undefined : 'expected an IPv4 address, e.g. 192.168.1.10'),
};

/** The resolved kvstore configuration. */
export type KVStoreConfig = ValuesOf<typeof kvstoreConfigSchema>;

/** Token for the kvstore configuration. */
export const KVStoreConfigToken = token<KVStoreConfig>('KVStoreConfig');

/** The value of one `--kvstore-opt` key, if given. */
export function kvstoreOpt(cfg: Pick<KVStoreConfig, 'kvstoreOpt'>, key: (typeof KVSTORE_OPTS)[number]): string | undefined {
  const o = cfg.kvstoreOpt.find((x) => x.startsWith(`${key}=`));
  return o?.slice(key.length + 1);
}
