import { isDeepStrictEqual } from 'node:util';
import { Counter } from 'prom-client';
import type { HeaderMap } from '../../core/context.js';
import type { GatewayScope } from '../../core/plugin.js';
import { ConfigError } from '../../core/plugin.js';
import { BUILTIN_REDACT_HEADERS, isSecretName, REDACTED } from '../../debug/redaction.js';

/** What `gateway_shadow_mismatch_total` counts (docs/plugins/proxy-mirror.md#comparing-answers). */
export type MismatchKind = 'status' | 'header' | 'body' | 'error';

/** Mismatches kept per node (`GET /api/shadow/{policy}/{node}`), oldest dropped first. */
export const MAX_KEPT_MISMATCHES = 100;
/** Bytes of each body kept in a listed mismatch; the comparison itself reads up to `compare_max_body_bytes`. */
export const KEPT_BODY_BYTES = 2048;

/** One side of a compared exchange, as captured (bodies up to the node's limit). */
export interface Answer {
  status: number;
  headers: HeaderMap;
  /** The first bytes of the body, at most `compare_max_body_bytes` + 1. */
  body: Buffer;
  /** Total body length seen. */
  bodyBytes: number;
  /** False when the body was not read to its end (HEAD, a client that left). */
  complete: boolean;
}

export interface ShownSide {
  status: number;
  headers: Record<string, string>;
  body: string;
  body_bytes: number;
  body_truncated: boolean;
}

export interface ShownMismatch {
  time: string;
  method: string;
  path: string;
  kinds: MismatchKind[];
  /** The shadow's failure, for `kind: error`. */
  error?: string;
  /** False when a body was larger than `compare_max_body_bytes` (or cut short): status and headers only. */
  body_compared: boolean;
  primary: ShownSide;
  shadow: ShownSide | null;
}

/** The per-gateway record of every comparing node: the counter and the last mismatches of each. */
export class ShadowRecords {
  readonly #counter: Counter<'policy' | 'node_id' | 'kind'>;
  readonly #lists = new Map<string, ShownMismatch[]>();
  /**
   * Set in a worker (src/cluster/worker.ts): mismatches go to the primary, whose Admin API lists
   * them; the counter stays here (the primary sums the workers' registries).
   */
  forward: ((policy: string, node: string, mismatch: ShownMismatch) => void) | undefined;

  constructor(scope: GatewayScope) {
    this.#counter = new Counter({
      name: 'gateway_shadow_mismatch_total',
      help: 'proxy-mirror compare: shadow answers that differed from the primary answer, by kind',
      labelNames: ['policy', 'node_id', 'kind'],
      registers: [scope.metrics.registry],
    });
  }

  /** Makes the node known (an empty list answers 200) before its first mismatch. */
  register(policy: string, node: string): void {
    const key = keyOf(policy, node);
    if (!this.#lists.has(key)) this.#lists.set(key, []);
  }

  record(policy: string, node: string, mismatch: ShownMismatch): void {
    for (const kind of mismatch.kinds) this.#counter.inc({ policy, node_id: node, kind });
    if (this.forward !== undefined) this.forward(policy, node, mismatch);
    else this.keep(policy, node, mismatch);
  }

  /** Lists a mismatch without counting it (one a worker counted and forwarded). */
  keep(policy: string, node: string, mismatch: ShownMismatch): void {
    const key = keyOf(policy, node);
    let list = this.#lists.get(key);
    if (list === undefined) this.#lists.set(key, (list = []));
    list.push(mismatch);
    if (list.length > MAX_KEPT_MISMATCHES) list.splice(0, list.length - MAX_KEPT_MISMATCHES);
  }

  /** Newest first; undefined for a node that never compared. */
  list(policy: string, node: string): ShownMismatch[] | undefined {
    const list = this.#lists.get(keyOf(policy, node));
    return list === undefined ? undefined : [...list].reverse();
  }
}

const keyOf = (policy: string, node: string): string => `${policy}\u0000${node}`;

/** The gateway's one `ShadowRecords` (the counter is registered once per registry). */
export function shadowRecords(scope: GatewayScope): ShadowRecords {
  return scope.shared('proxy-mirror:shadow-records', () => new ShadowRecords(scope));
}

/** A parsed `compare_json_paths` entry: `$.a.b[0].c` → ['a', 'b', 0, 'c']. */
export type JsonPath = (string | number)[];

const SEGMENT = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\])/;

/** Parses `$.a.b[0]['x y']`; `key` names the config entry in the error. */
export function parseJsonPath(text: string, key: string): JsonPath {
  if (!text.startsWith('$')) throw new ConfigError(key, `'${text}' must start with $ (e.g. $.data.id)`);
  const out: JsonPath = [];
  let rest = text.slice(1);
  while (rest !== '') {
    const m = SEGMENT.exec(rest);
    if (m === null) {
      throw new ConfigError(key, `'${text}' is not a JSON path: use $.name, $.list[0] or $['odd name']`);
    }
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else out.push((m[3] ?? m[4]) as string);
    rest = rest.slice(m[0].length);
  }
  return out;
}

const MISSING = Symbol('missing');

function valueAt(doc: unknown, path: JsonPath): unknown {
  let cur: unknown = doc;
  for (const seg of path) {
    if (typeof seg === 'number') {
      if (!Array.isArray(cur) || seg >= cur.length) return MISSING;
      cur = cur[seg];
    } else {
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !Object.hasOwn(cur, seg))
        return MISSING;
      cur = (cur as Record<string, unknown>)[seg];
    }
  }
  return cur;
}

export interface CompareRules {
  headers: readonly string[];
  jsonPaths: readonly JsonPath[] | undefined;
  maxBodyBytes: number;
}

/** The kinds in which `shadow` differs from `primary`, and whether the bodies were compared. */
export function compareAnswers(
  primary: Answer,
  shadow: Answer,
  rules: CompareRules,
): { kinds: MismatchKind[]; bodyCompared: boolean } {
  const kinds: MismatchKind[] = [];
  if (primary.status !== shadow.status) kinds.push('status');
  if (rules.headers.some((name) => headerText(primary.headers, name) !== headerText(shadow.headers, name))) {
    kinds.push('header');
  }
  const bodyCompared =
    primary.complete &&
    shadow.complete &&
    primary.bodyBytes <= rules.maxBodyBytes &&
    shadow.bodyBytes <= rules.maxBodyBytes;
  if (bodyCompared && !bodiesMatch(primary.body, shadow.body, rules.jsonPaths)) kinds.push('body');
  return { kinds, bodyCompared };
}

function bodiesMatch(a: Buffer, b: Buffer, paths: readonly JsonPath[] | undefined): boolean {
  if (paths === undefined) return a.equals(b);
  let left: unknown;
  let right: unknown;
  try {
    left = JSON.parse(a.toString('utf8'));
    right = JSON.parse(b.toString('utf8'));
  } catch {
    // Either side not JSON: only byte-equal bodies match.
    return a.equals(b);
  }
  return paths.every((p) => isDeepStrictEqual(valueAt(left, p), valueAt(right, p)));
}

function headerText(headers: HeaderMap, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

const REDACT = new Set(BUILTIN_REDACT_HEADERS);

/** Header values of credential-shaped names masked the way traces mask them (docs/debugging.md). */
export function shownSide(answer: Answer): ShownSide {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    headers[lower] =
      REDACT.has(lower) || isSecretName(lower)
        ? REDACTED
        : Array.isArray(value)
          ? value.join(', ')
          : String(value);
  }
  const kept = answer.body.subarray(0, KEPT_BODY_BYTES);
  return {
    status: answer.status,
    headers,
    body: kept.toString('utf8'),
    body_bytes: answer.bodyBytes,
    body_truncated: answer.bodyBytes > kept.length || !answer.complete,
  };
}
