/**
 * Test PKI made with the openssl CLI in a temp dir (removed when the test ends): a CA, a server
 * certificate for 127.0.0.1/localhost and a client certificate it signed, and a rogue CA with a
 * client certificate of its own (what an attacker could make). Keys are mode 0600.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestLike } from '../../src/hive/index.js';

/** Paths of the test PKI's files. */
export interface TestPki {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  readonly rogueCaCert: string;
  readonly rogueClientCert: string;
  readonly rogueClientKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function makeCa(dir: string, name: string): void {
  openssl(dir, ['req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-subj', `/CN=${name}`, '-days', '2']);
}

function makeLeaf(dir: string, ca: string, name: string, ext: string): void {
  openssl(dir, ['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`]);
  chmodSync(join(dir, `${name}.key`), 0o600);
}

/** Makes the test PKI. */
export function makeTestPki(t: TestLike): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-pki-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  makeCa(dir, 'ca');
  makeCa(dir, 'rogue-ca');
  makeLeaf(dir, 'ca', 'server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  makeLeaf(dir, 'ca', 'client', 'extendedKeyUsage=clientAuth\n');
  makeLeaf(dir, 'rogue-ca', 'rogue-client', 'extendedKeyUsage=clientAuth\n');
  const p = (f: string): string => join(dir, f);
  return {
    dir,
    caCert: p('ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    rogueCaCert: p('rogue-ca.crt'),
    rogueClientCert: p('rogue-client.crt'),
    rogueClientKey: p('rogue-client.key'),
  };
}

/** Writes a token file with `mode` into the PKI's dir; returns its path. */
export function writeToken(pki: TestPki, name: string, text: string, mode = 0o600): string {
  const path = join(pki.dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}
