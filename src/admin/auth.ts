import { createHash, timingSafeEqual } from 'node:crypto';

export const ADMIN_REALM = 'switchyard admin';

export const CHALLENGE = { 'www-authenticate': `Basic realm="${ADMIN_REALM}"` } as const;

export interface AdminAccount {
  username: string;
  password: string;
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * HTTP Basic verification against every configured account. Comparing
 * fixed-length digests with timingSafeEqual, and always visiting every
 * account, keeps the time independent of how much of a guess was right.
 */
export function basicAuthVerifier(
  accounts: readonly AdminAccount[],
): (header: string | undefined) => boolean {
  const known = accounts.map((a) => ({ user: digest(a.username), pass: digest(a.password) }));
  return (header) => {
    const credentials = parseBasic(header);
    if (credentials === undefined) return false;
    const user = digest(credentials.username);
    const pass = digest(credentials.password);
    let ok = false;
    for (const account of known) {
      const userOk = timingSafeEqual(user, account.user);
      const passOk = timingSafeEqual(pass, account.pass);
      ok = (userOk && passOk) || ok;
    }
    return ok;
  };
}

function parseBasic(header: string | undefined): AdminAccount | undefined {
  if (header === undefined) return undefined;
  const match = /^basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
