import { accessSync, constants } from 'node:fs';
import type { ConfigIssue } from './schema-validate.js';
import type { SystemConfig } from './system.js';

/** The system.yaml sections that open a listener, with the key a bind failure points at. */
export type ListenerKey = 'listener' | 'admin' | 'stream';

const FILE_KEYS = new Set(['cert_path', 'key_path', 'client_ca_path', 'crl_path']);

/**
 * Certificate, key and CA files of `tls` and `admin.tls` that cannot be read,
 * each at its key path: `validate` reports them instead of "valid" followed
 * by a failed start (docs/configuration.md).
 */
export function tlsFileIssues(system: SystemConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const visit = (value: unknown, path: string): void => {
    if (Array.isArray(value)) value.forEach((v, i) => visit(v, `${path}[${i}]`));
    else if (typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) {
        const at = `${path}.${key}`;
        if (FILE_KEYS.has(key) && typeof v === 'string') {
          const problem = unreadable(v);
          if (problem !== undefined) issues.push({ path: at, message: `cannot read '${v}': ${problem}` });
        } else visit(v, at);
      }
    }
  };
  if (system.tls !== undefined) visit(system.tls, 'tls');
  if (system.admin?.tls !== undefined) visit(system.admin.tls, 'admin.tls');
  system.stream.forEach((l, i) => {
    if (l.tls !== undefined) visit(l.tls, `stream[${i}].tls`);
  });
  return issues;
}

function unreadable(file: string): string | undefined {
  try {
    accessSync(file, constants.R_OK);
    return undefined;
  } catch (err) {
    return describeFsCode((err as NodeJS.ErrnoException).code) ?? (err as Error).message;
  }
}

function describeFsCode(code: string | undefined): string | undefined {
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    default:
      return undefined;
  }
}

/**
 * One readable line for an error that stops a listener from starting,
 * naming the system.yaml key to change: `listener.port 8080 is already in
 * use`, `tls.cert_path: cannot read 'x.pem': no such file`.
 */
export function describeStartupError(err: unknown, key: ListenerKey, system: SystemConfig): string {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  const message = err instanceof Error ? err.message : String(err);
  const portKey = key === 'stream' ? 'stream[].port' : `${key}.port`;
  const bindKey = key === 'stream' ? 'stream[].bind' : `${key}.bind`;
  const where = e.address === undefined ? '' : ` (${e.address}:${e.port ?? ''})`;
  switch (e.syscall === 'listen' || e.syscall === 'bind' ? e.code : undefined) {
    case 'EADDRINUSE':
      return `${portKey} ${e.port ?? ''} is already in use${where}: stop the other process or choose another port`;
    case 'EACCES':
      return `${portKey} ${e.port ?? ''}: permission denied${where}; ports below 1024 need privileges`;
    case 'EADDRNOTAVAIL':
      return `${bindKey} ${e.address ?? ''} is not an address of this machine`;
  }
  if (typeof e.path === 'string') {
    const at = keyHolding(system, e.path) ?? (key === 'admin' ? 'admin.tls' : 'tls');
    return `${at}: cannot read '${e.path}': ${describeFsCode(e.code) ?? message}`;
  }
  if (/PEM|certificate|private key|ERR_OSSL/i.test(`${message} ${e.code ?? ''}`)) {
    return `${key === 'admin' ? 'admin.tls' : 'tls'}: the certificate or key cannot be used: ${message}`;
  }
  return `${key}: cannot start: ${message}`;
}

/** The key path of system.yaml whose string value is `value` (the file named by an fs error). */
function keyHolding(root: unknown, value: string, path = ''): string | undefined {
  if (root === value) return path;
  if (Array.isArray(root)) {
    for (const [i, v] of root.entries()) {
      const found = keyHolding(v, value, `${path}[${i}]`);
      if (found !== undefined) return found;
    }
  } else if (typeof root === 'object' && root !== null) {
    for (const [k, v] of Object.entries(root)) {
      const found = keyHolding(v, value, path === '' ? k : `${path}.${k}`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
