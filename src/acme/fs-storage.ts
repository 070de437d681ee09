import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { AcmeStorage, StoredAccount, StoredCert } from './storage.js';

/**
 * ACME state in a directory: `account.json` (0600), `certs/<id>/chain.pem`,
 * `certs/<id>/key.pem` (0600), `certs/<id>/meta.json`, and lease files under
 * `leases/`. Every write goes to a temp file that is fsynced and renamed, so
 * a crash never leaves half a certificate.
 */
export class FilesystemStorage implements AcmeStorage {
  readonly kind = 'filesystem';
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async loadAccount(): Promise<StoredAccount | undefined> {
    const text = await readOptional(join(this.#dir, 'account.json'));
    return text === undefined ? undefined : (JSON.parse(text) as StoredAccount);
  }

  saveAccount(account: StoredAccount): Promise<void> {
    return writeAtomic(join(this.#dir, 'account.json'), JSON.stringify(account, null, 2), 0o600);
  }

  async loadCert(id: string): Promise<StoredCert | undefined> {
    const dir = this.#certDir(id);
    const [cert, key, meta] = await Promise.all([
      readOptional(join(dir, 'chain.pem')),
      readOptional(join(dir, 'key.pem')),
      readOptional(join(dir, 'meta.json')),
    ]);
    if (cert === undefined || key === undefined) return undefined;
    const issuedAt = meta === undefined ? undefined : (JSON.parse(meta) as { issued_at?: string }).issued_at;
    return { cert, key, issued_at: issuedAt ?? '' };
  }

  async saveCert(id: string, cert: StoredCert): Promise<void> {
    const dir = this.#certDir(id);
    // Key first: a chain is never readable beside a key that does not match it for long.
    await writeAtomic(join(dir, 'key.pem'), cert.key, 0o600);
    await writeAtomic(join(dir, 'chain.pem'), cert.cert, 0o644);
    await writeAtomic(join(dir, 'meta.json'), JSON.stringify({ issued_at: cert.issued_at }), 0o644);
  }

  async acquireLease(id: string, owner: string, ttlMs: number): Promise<boolean> {
    const path = join(this.#dir, 'leases', `${safeName(id)}.lock`);
    await mkdir(dirname(path), { recursive: true });
    const body = JSON.stringify({ owner, expires_at: Date.now() + ttlMs });
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        // O_EXCL: exactly one process creates the lock file.
        const handle = await open(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
        try {
          await handle.writeFile(body);
          await handle.sync();
        } finally {
          await handle.close();
        }
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const held = await readLease(path);
      if (held !== undefined && held.expires_at > Date.now()) return false;
      // Expired (or unreadable): a crashed holder's lock is taken over.
      await unlink(path).catch(() => undefined);
    }
    return false;
  }

  async releaseLease(id: string, owner: string): Promise<void> {
    const path = join(this.#dir, 'leases', `${safeName(id)}.lock`);
    const held = await readLease(path);
    if (held?.owner === owner) await unlink(path).catch(() => undefined);
  }

  #certDir(id: string): string {
    return join(this.#dir, 'certs', safeName(id));
  }
}

/**
 * Cert ids are DNS names (a wildcard's `*` stored as `_`, which no DNS name holds) and commas;
 * anything else would be a bug, never a path component.
 */
function safeName(id: string): string {
  if (!/^[a-z0-9.,*-]+$/.test(id)) throw new Error(`invalid certificate id '${id}'`);
  return id.replaceAll('*', '_');
}

async function readLease(path: string): Promise<{ owner: string; expires_at: number } | undefined> {
  const text = await readOptional(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as { owner: string; expires_at: number };
  } catch {
    return undefined;
  }
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** temp file + fsync + rename (+ fsync of the directory), created with `mode`. */
export async function writeAtomic(path: string, data: string, mode: number): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, path);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  } finally {
    await d.close();
  }
}
