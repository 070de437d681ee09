import { readFile, realpath, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { FileManagerConfig } from './schema.js';
import { SecretError, type SecretManager } from './manager.js';

/**
 * `${secret:file:/run/secrets/api#key}`: a file's trimmed text, or a key of it read as JSON. Read
 * again every `refresh_s`, and only when its modification time or size changed (a mounted
 * Kubernetes Secret or a Docker secret is replaced by a rename: both change).
 */
export class FileSecretManager implements SecretManager {
  readonly type = 'file';
  readonly refreshMs: number;
  readonly #seen = new Map<string, { stamp: string; text: string }>();
  /** `dirs`, resolved; undefined: no restriction. */
  readonly #dirs: string[] | undefined;

  constructor(config: FileManagerConfig) {
    this.refreshMs = config.refresh_s * 1000;
    this.#dirs = config.dirs?.map((d) => resolve(d));
  }

  async load(path: string): Promise<string> {
    if (this.#dirs !== undefined) await this.#checkInside(path);
    let stamp: string;
    try {
      const s = await stat(path);
      stamp = `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch (err) {
      throw new SecretError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    const seen = this.#seen.get(path);
    if (seen !== undefined && seen.stamp === stamp) return seen.text;
    let text: string;
    try {
      text = (await readFile(path, 'utf8')).trim();
    } catch (err) {
      throw new SecretError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    this.#seen.set(path, { stamp, text });
    return text;
  }

  /** A path (symbolic links followed) inside one of `dirs`: a config writer cannot read any file. */
  async #checkInside(path: string): Promise<void> {
    let real: string;
    try {
      real = await realpath(resolve(path));
    } catch (err) {
      throw new SecretError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    const dirs = await Promise.all((this.#dirs ?? []).map((d) => realpath(d).catch(() => d)));
    if (!dirs.some((d) => real === d || real.startsWith(d.endsWith(sep) ? d : d + sep)))
      throw new SecretError(`${path} is outside secrets.file.dirs`);
  }

  close(): void {
    this.#seen.clear();
  }
}
