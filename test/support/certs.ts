import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertPair {
  cert: string;
  key: string;
  certPem: string;
  keyPem: string;
}

export interface Authority extends CertPair {
  /** Issues a leaf certificate signed by this CA. */
  issue(name: string, options?: { cn?: string; dns?: string[]; ips?: string[]; client?: boolean }): CertPair;
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
        `subjectAltName=${san.join(',')}\nextendedKeyUsage=${options.client ? 'clientAuth' : 'serverAuth'}\n`,
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
