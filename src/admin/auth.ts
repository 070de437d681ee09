import { createHash, timingSafeEqual } from 'node:crypto';
import { SWITCHYARD_NAMES } from '../config/compat-names.js';

/** Default realm; `admin.realm` (or `compat.admin_realm`) replaces it. */
export const ADMIN_REALM = SWITCHYARD_NAMES.adminRealm;

/** The Basic challenge of a 401 from the Admin API. */
export const basicChallenge = (realm: string = ADMIN_REALM): { 'www-authenticate': string } => ({
  'www-authenticate': `Basic realm="${realm.replace(/["\\]/g, '')}"`,
});

export const CHALLENGE = basicChallenge();

/** `admin` reads and writes; `viewer` reads, with secrets masked, and writes nothing. */
export type AdminRole = 'admin' | 'viewer';

export interface AdminAccount {
  username: string;
  password: string;
  role?: AdminRole;
}

/**
 * What an `Authorization` header proved: nothing sent (`none`, the browser's
 * first request before its login prompt), a configured account (`ok`), or a
 * failed attempt with the user name it claimed, when it could be decoded.
 */
export type AuthOutcome =
  | { kind: 'none' }
  | { kind: 'ok'; username: string; role: AdminRole }
  | {
      kind: 'failed';
      username: string | undefined;
      /**
       * The header's scheme when it is not Basic (`bearer`: a metrics token sent to /api/*), lower
       * case, for the log line; never the credentials themselves.
       */
      scheme?: string;
    };

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * HTTP Basic verification against every configured account. Comparing
 * fixed-length digests with timingSafeEqual, and always visiting every
 * account, keeps the time independent of how much of a guess was right.
 * An empty password never verifies, whatever the accounts say (H3).
 */
export function basicAuthVerifier(
  accounts: readonly AdminAccount[],
): (header: string | undefined) => AuthOutcome {
  const known = accounts
    .filter((a) => a.password !== '')
    .map((a) => ({ user: digest(a.username), pass: digest(a.password), role: a.role ?? 'admin' }));
  return (header) => {
    if (header === undefined || header === '') return { kind: 'none' };
    const credentials = parseBasic(header);
    if (credentials === undefined) {
      const scheme = schemeOf(header);
      return scheme === 'basic'
        ? { kind: 'failed', username: undefined }
        : { kind: 'failed', username: undefined, scheme };
    }
    const user = digest(credentials.username);
    const pass = digest(credentials.password);
    let matched: AdminRole | undefined;
    for (const account of known) {
      const userOk = timingSafeEqual(user, account.user);
      const passOk = timingSafeEqual(pass, account.pass);
      if (userOk && passOk && matched === undefined) matched = account.role;
    }
    if (matched !== undefined && credentials.password !== '') {
      return { kind: 'ok', username: credentials.username, role: matched };
    }
    return { kind: 'failed', username: credentials.username };
  };
}

/** The scheme word of an Authorization header, lower case; `other` when it is not a plain token word. */
function schemeOf(header: string): string {
  const word = /^\s*(\S+)/.exec(header)?.[1]?.toLowerCase() ?? '';
  return /^[a-z][a-z0-9._-]{0,19}$/.test(word) ? word : 'other';
}

function parseBasic(header: string): AdminAccount | undefined {
  const match = /^basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
