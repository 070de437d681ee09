import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { startDaemon } from './daemon.js';
import { tempDir } from './temp-dir.js';

/** Suffix of the test directory; people live under `ou=people`. */
export const SLAPD_SUFFIX = 'dc=example,dc=test';
export const SLAPD_PEOPLE = `ou=people,${SLAPD_SUFFIX}`;

export interface SlapdUser {
  uid: string;
  cn: string;
  password: string;
}

export interface SlapdServer {
  readonly port: number;
  /** `ldap://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops slapd (SIGTERM), waits for it to exit and removes its directory. */
  stop(): Promise<void>;
}

const DEFAULT_USERS: readonly SlapdUser[] = [
  { uid: 'alice', cn: 'Alice Liddell', password: 'alice-pw' },
  { uid: 'bob', cn: 'Bob Builder', password: 'bob pw with spaces' },
];

/** The system binaries; `SLAPD_BIN` / `SLAPADD_BIN` override, /usr/sbin is tried when not on PATH. */
function binary(name: 'slapd' | 'slapadd'): string | undefined {
  const override = process.env[name === 'slapd' ? 'SLAPD_BIN' : 'SLAPADD_BIN'];
  if (override !== undefined && override !== '') return override;
  for (const candidate of [name, `/usr/sbin/${name}`]) {
    const probe = spawnSync(candidate, ['-VV'], { stdio: 'ignore' });
    // slapd -VV prints its version and exits non-zero; only "not found" leaves no status.
    if (probe.error === undefined && probe.status !== null) return candidate;
  }
  return undefined;
}

let found: { slapd: string; slapadd: string } | null | undefined;

function binaries(): { slapd: string; slapadd: string } | null {
  if (found === undefined) {
    const slapd = binary('slapd');
    const slapadd = binary('slapadd');
    found = slapd === undefined || slapadd === undefined ? null : { slapd, slapadd };
  }
  return found;
}

/**
 * `skip` option for suites that need slapd: a reason on a developer machine
 * without it; `false` in CI, where `startSlapd` then fails the suite.
 */
export function skipWithoutSlapd(): string | false {
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') return false;
  return binaries() === null ? 'slapd/slapadd not found (install slapd)' : false;
}

function ldif(users: readonly SlapdUser[]): string {
  const people = users.map(
    (u) => `dn: uid=${u.uid},${SLAPD_PEOPLE}
objectClass: inetOrgPerson
uid: ${u.uid}
cn: ${u.cn}
sn: ${u.cn.split(' ').at(-1) ?? u.cn}
userPassword: ${u.password}
`,
  );
  return [
    `dn: ${SLAPD_SUFFIX}
objectClass: dcObject
objectClass: organization
dc: example
o: Example
`,
    `dn: ${SLAPD_PEOPLE}
objectClass: organizationalUnit
ou: people
`,
    ...people,
  ].join('\n');
}

function slapdConf(dir: string): string {
  return `include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile ${join(dir, 'slapd.pid')}
database mdb
maxsize 10485760
suffix "${SLAPD_SUFFIX}"
rootdn "cn=admin,${SLAPD_SUFFIX}"
rootpw admin-secret
directory ${join(dir, 'db')}
`;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => done(true));
  });
}

/**
 * Starts the system slapd on a free loopback port with a temporary
 * slapd.conf and a directory of `users` under `ou=people,dc=example,dc=test`
 * (bind DN `uid=<uid>,ou=people,dc=example,dc=test`). Always `stop()` it.
 */
export async function startSlapd(users: readonly SlapdUser[] = DEFAULT_USERS): Promise<SlapdServer> {
  const bins = binaries();
  if (bins === null) throw new Error('slapd and slapadd are required for this test and were not found');
  const dir = tempDir('switchyard-slapd-');
  mkdirSync(join(dir.path, 'db'));
  const conf = join(dir.path, 'slapd.conf');
  writeFileSync(conf, slapdConf(dir.path));
  writeFileSync(join(dir.path, 'base.ldif'), ldif(users));
  const load = spawnSync(bins.slapadd, ['-f', conf, '-l', join(dir.path, 'base.ldif')], { encoding: 'utf8' });
  if (load.status !== 0) {
    dir.remove();
    throw new Error(`slapadd failed (${load.status}): ${load.stderr}`);
  }

  let started;
  try {
    started = await startDaemon({
      name: 'slapd',
      ports: 1,
      // -d 0 keeps slapd in the foreground, so this child is the server and SIGTERM stops it.
      command: ([port]) => ({
        bin: bins.slapd,
        args: ['-f', conf, '-h', `ldap://127.0.0.1:${port}/`, '-d', '0'],
      }),
      ready: ([port]) => accepts(port!),
    });
  } catch (err) {
    dir.remove();
    throw err;
  }
  const { daemon } = started;
  const port = started.ports[0]!;
  return {
    port,
    url: `ldap://127.0.0.1:${port}`,
    async stop() {
      await daemon.stop();
      if (existsSync(dir.path)) dir.remove();
    },
  };
}
