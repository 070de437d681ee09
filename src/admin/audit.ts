import { closeSync, openSync, readSync, fstatSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { configSha256 } from '../config/canonical.js';
import { EtcdConflict } from '../config/etcd-source.js';
import { asActor } from '../config/history.js';
import { ConfigRejected } from '../config/schema-validate.js';
import type { Gateway } from '../gateway.js';
import { AdminError, json, type Reply } from './http.js';
import type { AdminRoute } from './router.js';

/** One admin change (docs/config-as-code.md#audit-log). */
export interface AuditEntry {
  time: string;
  user: string | null;
  method: string;
  resource: string;
  before_sha256: string;
  after_sha256: string;
  status: number;
}

/** Entries kept in memory (and read back from the file's tail at start) for `GET /api/audit`. */
const KEPT = 1000;
/** The tail of the file read at start. */
const TAIL_BYTES = 1024 * 1024;

/**
 * The append-only audit log of Admin API writes: every write with its author, its status and
 * the sha256 of the configuration before and after. Appended to `gateway.yaml.audit.jsonl`
 * beside gateway.yaml (one JSON object per line, never rewritten), the last 1000 kept in memory.
 */
export class AuditLog {
  readonly #path: string | undefined;
  readonly #entries: AuditEntry[] = [];
  #writing: Promise<void> = Promise.resolve();

  constructor(path: string | undefined) {
    this.#path = path;
    if (path !== undefined) this.#entries.push(...readTail(path));
  }

  add(entry: AuditEntry): void {
    this.#entries.push(entry);
    if (this.#entries.length > KEPT) this.#entries.splice(0, this.#entries.length - KEPT);
    const path = this.#path;
    if (path === undefined) return;
    const line = JSON.stringify(entry) + '\n';
    this.#writing = this.#writing.then(() => appendFile(path, line)).catch(() => undefined);
  }

  /** Newest first. */
  list(limit: number): AuditEntry[] {
    return this.#entries.slice(-limit).reverse();
  }

  flushed(): Promise<void> {
    return this.#writing;
  }
}

function readTail(path: string): AuditEntry[] {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return [];
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - TAIL_BYTES);
    const buffer = Buffer.alloc(size - start);
    readSync(fd, buffer, 0, buffer.length, start);
    const lines = buffer.toString('utf8').split('\n');
    if (start > 0) lines.shift();
    const out: AuditEntry[] = [];
    for (const line of lines) {
      if (line.trim() === '') continue;
      try {
        out.push(JSON.parse(line) as AuditEntry);
      } catch {
        // A torn last line (a crash mid-append) is skipped.
      }
    }
    return out.slice(-KEPT);
  } finally {
    closeSync(fd);
  }
}

const logs = new WeakMap<Gateway, AuditLog>();

/** The gateway's audit log (its file beside gateway.yaml, or memory only without a path). */
export function auditLogOf(gateway: Gateway): AuditLog {
  let log = logs.get(gateway);
  if (log === undefined) {
    log = new AuditLog(gateway.gatewayPath === undefined ? undefined : `${gateway.gatewayPath}.audit.jsonl`);
    logs.set(gateway, log);
  }
  return log;
}

/** The status an error thrown by a handler answers with (src/admin/server.ts errorReply). */
function statusOf(err: unknown): number {
  if (err instanceof AdminError) return err.status;
  if (err instanceof ConfigRejected) return 400;
  if (err instanceof EtcdConflict) return 409;
  return (err as { name?: string })?.name === 'EtcdUnavailable' ? 503 : 500;
}

/**
 * Runs an Admin API write handler with `user` as the author of what it applies (the history
 * names it), and appends one audit entry with its status, whether it succeeded or not.
 */
export async function audited(
  gateway: Gateway,
  write: { user: string | null; method: string; resource: string },
  handler: () => Reply | Promise<Reply>,
): Promise<Reply> {
  const before = configSha256(gateway.runtime.config);
  const entry = (status: number): AuditEntry => ({
    time: new Date().toISOString(),
    user: write.user,
    method: write.method,
    resource: write.resource,
    before_sha256: before,
    after_sha256: configSha256(gateway.runtime.config),
    status,
  });
  try {
    const reply = await asActor({ user: write.user }, handler);
    auditLogOf(gateway).add(entry(reply.status));
    return reply;
  } catch (err) {
    auditLogOf(gateway).add(entry(statusOf(err)));
    throw err;
  }
}

/** `GET /api/audit?limit=N` (newest first, default 100, at most 1000). */
export function auditRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/audit',
      auth: true,
      handler: ({ query }) => {
        const asked = Number(query.get('limit') ?? 100);
        const limit = Number.isInteger(asked) && asked > 0 ? Math.min(asked, KEPT) : 100;
        return json(200, { entries: auditLogOf(gateway).list(limit) });
      },
    },
  ];
}
