import { execFileSync } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertPair {
  cert: string;
  key: string;
  certPem: string;
  keyPem: string;
}

export interface Authority extends CertPair {
  /** Issues a leaf certificate signed by this CA. */
  issue(
    name: string,
    options?: { cn?: string; dns?: string[]; ips?: string[]; client?: boolean; alsoClient?: boolean },
  ): CertPair;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function pair(dir: string, name: string): CertPair {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  return { cert, key, certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
}

/** A throwaway certificate authority in `dir`, generated with the system openssl (EC P-256). */
export function createAuthority(dir: string, name = 'ca'): Authority {
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name} test CA`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  const ca = pair(dir, name);
  return {
    ...ca,
    issue(leaf, options = {}) {
      const cn = options.cn ?? leaf;
      const san = [
        ...(options.dns ?? [cn]).map((d) => `DNS:${d}`),
        ...(options.ips ?? []).map((i) => `IP:${i}`),
      ];
      const ext = join(dir, `${leaf}.ext`);
      writeFileSync(
        ext,
        `subjectAltName=${san.join(',')}\nextendedKeyUsage=${options.client ? 'clientAuth' : options.alsoClient ? 'serverAuth,clientAuth' : 'serverAuth'}\n`,
      );
      openssl(
        [
          'req',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-subj',
          `/CN=${cn}`,
          '-keyout',
          `${leaf}.key`,
          '-out',
          `${leaf}.csr`,
        ],
        dir,
      );
      openssl(
        [
          'x509',
          '-req',
          '-in',
          `${leaf}.csr`,
          '-CA',
          `${name}.crt`,
          '-CAkey',
          `${name}.key`,
          '-CAcreateserial',
          '-days',
          '2',
          '-extfile',
          ext,
          '-out',
          `${leaf}.crt`,
        ],
        dir,
      );
      return pair(dir, leaf);
    },
  };
}

/**
 * An `openssl ca` database for a CA made by `createAuthority`: revocations,
 * CRLs, and the index `openssl ocsp -index` answers from.
 */
export interface CaDatabase {
  /** The openssl config file (`-config`). */
  config: string;
  /** The index file (`openssl ocsp -index`). */
  index: string;
  /** Records a certificate as valid: the OCSP responder then answers "good" for it. */
  register(certPath: string): void;
  /** Marks a certificate revoked (it need not have been registered). */
  revoke(certPath: string): void;
  /** Writes a PEM CRL listing the revocations so far to `out` (atomically) and returns `out`. */
  crl(out: string): string;
}

export function caDatabase(dir: string, authority: CertPair, name = 'ca'): CaDatabase {
  const index = join(dir, `${name}-index.txt`);
  const config = join(dir, `${name}-openssl.cnf`);
  writeFileSync(index, '');
  writeFileSync(join(dir, `${name}-crlnumber`), '01\n');
  writeFileSync(
    config,
    [
      '[ca]',
      'default_ca = db',
      '[db]',
      `database = ${index}`,
      `crlnumber = ${join(dir, `${name}-crlnumber`)}`,
      `certificate = ${authority.cert}`,
      `private_key = ${authority.key}`,
      'default_md = sha256',
      'default_crl_days = 2',
      'unique_subject = no',
      '',
    ].join('\n'),
  );
  return {
    config,
    index,
    register(certPath) {
      openssl(['ca', '-config', config, '-valid', certPath], dir);
    },
    revoke(certPath) {
      openssl(['ca', '-config', config, '-revoke', certPath, '-crl_reason', 'keyCompromise'], dir);
    },
    crl(out) {
      const tmp = `${out}.tmp`;
      openssl(['ca', '-config', config, '-gencrl', '-out', tmp], dir);
      renameSync(tmp, out);
      return out;
    },
  };
}

/**
 * A server certificate from `authority` whose Authority Information Access
 * names `ocspUrl` as its OCSP responder; `chain` is the leaf followed by the CA.
 */
export function issueWithOcsp(
  dir: string,
  authority: CertPair,
  leaf: string,
  options: { dns: string[]; ips?: string[]; ocspUrl: string },
): CertPair & { chain: string } {
  const san = [...options.dns.map((d) => `DNS:${d}`), ...(options.ips ?? []).map((i) => `IP:${i}`)];
  const ext = join(dir, `${leaf}.ext`);
  writeFileSync(
    ext,
    `subjectAltName=${san.join(',')}\nextendedKeyUsage=serverAuth\nauthorityInfoAccess=OCSP;URI:${options.ocspUrl}\n`,
  );
  openssl(
    [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-subj',
      `/CN=${options.dns[0] ?? leaf}`,
      '-keyout',
      `${leaf}.key`,
      '-out',
      `${leaf}.csr`,
    ],
    dir,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${leaf}.csr`,
      '-CA',
      authority.cert,
      '-CAkey',
      authority.key,
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      ext,
      '-out',
      `${leaf}.crt`,
    ],
    dir,
  );
  const issued = pair(dir, leaf);
  const chain = join(dir, `${leaf}-chain.crt`);
  writeFileSync(chain, issued.certPem + authority.certPem);
  return { ...issued, chain };
}
