import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '../stores/index.js';

/**
 * Server-side session records in a store. Per session: the sealed payload
 * (`sess:{<id>}`) and its unencrypted metadata for operators
 * (`sess:{<id>}:meta`), both expiring with the session; per subject, a set of
 * ids (`subj:{<sha256>}`) behind revoke-by-subject. Braces are Redis Cluster
 * hash tags: one session's keys share a slot.
 */

/** What the Admin API shows of a session (docs/admin-api.md); never the payload. */
export interface SessionMeta {
  id: string;
  subject: string;
  plugin: string;
  policy: string;
  route: string;
  /** Unix seconds. */
  created_at: number;
  expires_at: number;
}

export interface SessionPage {
  sessions: SessionMeta[];
  /** Pass back as `cursor` for the next page; null when the listing is complete. */
  next_cursor: string | null;
}

export interface SessionFilter {
  subject?: string | undefined;
  plugin?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** 128 random bits as 32 lowercase hex characters (docs/sessions.md, docs/admin-api.md#sessions). */
export const SESSION_ID = /^[0-9a-f]{32}$/;

export const newSessionId = (): string => randomBytes(16).toString('hex');

export const sessionKey = (id: string): string => `sess:{${id}}`;
export const metaKey = (id: string): string => `sess:{${id}}:meta`;
export const subjectKey = (subject: string): string =>
  `subj:{${createHash('sha256').update(subject, 'utf8').digest('hex')}}`;

// The subject index must outlive its longest-lived member: its TTL only ever grows.
const PUT = `
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
redis.call('SADD', KEYS[3], ARGV[4])
if redis.call('TTL', KEYS[3]) < tonumber(ARGV[3]) then redis.call('EXPIRE', KEYS[3], ARGV[3]) end
return 1`;

const TAKE = `
local meta = redis.call('GET', KEYS[2])
local n = redis.call('DEL', KEYS[1], KEYS[2])
return {n, meta or ''}`;

const SREM = `return redis.call('SREM', KEYS[1], unpack(ARGV))`;
const SMEMBERS = `return redis.call('SMEMBERS', KEYS[1])`;
const MGET = `return redis.call('MGET', unpack(KEYS))`;

// KEYS come in pairs (payload, meta); counts the sessions that still existed.
const DELETE_PAIRS = `
local n = 0
for i = 1, #KEYS, 2 do
  n = n + redis.call('DEL', KEYS[i])
  redis.call('DEL', KEYS[i + 1])
end
return n`;

export async function putSession(
  store: Store,
  id: string,
  sealed: string,
  meta: Omit<SessionMeta, 'id'>,
  ttlSeconds: number,
): Promise<void> {
  await store.eval(
    PUT,
    [sessionKey(id), metaKey(id), subjectKey(meta.subject)],
    [sealed, JSON.stringify(meta), Math.max(1, Math.ceil(ttlSeconds)), id],
  );
}

export function getSession(store: Store, id: string): Promise<string | null> {
  return store.get(sessionKey(id));
}

/** Removes one session; resolves to whether it existed. */
export async function deleteSession(store: Store, id: string): Promise<boolean> {
  const [count, metaText] = (await store.eval(TAKE, [sessionKey(id), metaKey(id)], [])) as [number, string];
  const meta = parseMeta(id, metaText);
  if (meta !== undefined) await store.eval(SREM, [subjectKey(meta.subject)], [id]);
  return count > 0;
}

/** Logout everywhere: removes every session of `subject`; resolves to how many there were. */
export async function deleteSubjectSessions(store: Store, subject: string): Promise<number> {
  const index = subjectKey(subject);
  const ids = (await store.eval(SMEMBERS, [index], [])) as string[];
  let revoked = 0;
  if (ids.length > 0) {
    revoked = (await store.eval(
      DELETE_PAIRS,
      ids.flatMap((id) => [sessionKey(id), metaKey(id)]),
      [],
    )) as number;
  }
  await store.delete(index);
  return revoked;
}

/**
 * One page of session metadata. With `subject`, reads that subject's index
 * (cursor = offset); otherwise walks SCAN over the metadata keys (cursor =
 * SCAN cursor), so a page may hold somewhat more or fewer than `limit`.
 */
export async function listSessions(store: Store, filter: SessionFilter): Promise<SessionPage> {
  return filter.subject === undefined
    ? scanSessions(store, filter)
    : subjectSessions(store, filter.subject, filter);
}

async function scanSessions(store: Store, filter: SessionFilter): Promise<SessionPage> {
  const sessions: SessionMeta[] = [];
  let cursor = filter.cursor ?? '0';
  do {
    const page = await store.scan('sess:{', cursor, Math.max(filter.limit, 100));
    cursor = page.cursor;
    const ids = page.keys
      .filter((k) => k.endsWith('}:meta'))
      .map((k) => k.slice('sess:{'.length, -'}:meta'.length));
    sessions.push(...(await loadMetas(store, ids)).filter((m) => matches(m, filter)));
  } while (cursor !== '0' && sessions.length < filter.limit);
  return { sessions, next_cursor: cursor === '0' ? null : cursor };
}

async function subjectSessions(store: Store, subject: string, filter: SessionFilter): Promise<SessionPage> {
  const index = subjectKey(subject);
  const ids = ((await store.eval(SMEMBERS, [index], [])) as string[]).sort();
  const metas = await loadMetas(store, ids);
  const live = new Set(metas.map((m) => m.id));
  const gone = ids.filter((id) => !live.has(id));
  // Expired members are pruned lazily, here.
  if (gone.length > 0) await store.eval(SREM, [index], gone);
  const matching = metas.filter((m) => m.subject === subject && matches(m, filter));
  const offset = Number(filter.cursor ?? '0') || 0;
  const end = offset + filter.limit;
  return {
    sessions: matching.slice(offset, end),
    next_cursor: end < matching.length ? String(end) : null,
  };
}

async function loadMetas(store: Store, ids: string[]): Promise<SessionMeta[]> {
  if (ids.length === 0) return [];
  const texts = (await store.eval(MGET, ids.map(metaKey), [])) as (string | null)[];
  const out: SessionMeta[] = [];
  ids.forEach((id, i) => {
    const meta = parseMeta(id, texts[i] ?? null);
    if (meta !== undefined) out.push(meta);
  });
  return out;
}

function matches(meta: SessionMeta, filter: SessionFilter): boolean {
  return filter.plugin === undefined || meta.plugin === filter.plugin;
}

function parseMeta(id: string, text: string | null): SessionMeta | undefined {
  if (text === null || text === '') return undefined;
  try {
    const m = JSON.parse(text) as Omit<SessionMeta, 'id'>;
    return {
      id,
      subject: m.subject,
      plugin: m.plugin,
      policy: m.policy,
      route: m.route,
      created_at: m.created_at,
      expires_at: m.expires_at,
    };
  } catch {
    return undefined;
  }
}
