import { interpolateEnv } from '../../config/interpolate.js';
import { isSecretName, REDACTED, type Redaction } from '../../debug/redaction.js';
import { environmentVariableNames } from '../../template/env-references.js';

/**
 * A whole-value `${NAME}` placeholder or `${secret:manager:path#field}` reference (docs/secrets.md)
 * names a secret without revealing it, so it is shown.
 */
const PLACEHOLDER = /^\$\{(?:[A-Za-z_][A-Za-z0-9_]*|secret:[a-z][a-z0-9_]*:[^#}\s]+(?:#[^}\s]+)?)\}$/;

/**
 * A value made only of references (`$remote_addr`, `${name}`, `{{request.headers.x}}`,
 * `{{env.NAME}}`) and separators holds no literal, so it cannot hold a secret.
 * `${NAME:-default}` is not one: the default may be a literal secret.
 */
const REFERENCES_ONLY =
  /^[\s:;,|/._-]*(?:(?:\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_.]*\}|\{\{\s*[A-Za-z_][\w.-]*\s*\}\})[\s:;,|/._-]*)+$/;

/** Keys that contain a secret word but hold addresses or names, not secrets (`token_endpoint`, `header_name`). */
const ADDRESS_KEY = /(_endpoint|_url|_uri|_path|_header_name|_name|_names|_algs?|_alg_values_expected)$/;

/**
 * `*_header` keys either name a header (`code_header: x-code`, `cache_status_header`) or hold a
 * header's value (http-logger `auth_header: Basic …`, review F-5). A key whose words before
 * `_header` are secret (`auth`, `token`, `cookie`, `key`, …) holds a value and is masked; any other
 * is shown only while its value is a header name (an RFC 9110 token), never a credential.
 */
const HEADER_KEY = /^(.+)_header$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Config keys are matched with the trace rule minus the words that name
 * features rather than values (`auth_plugins`, `session`, `cookie_name`),
 * plus the word `key` alone (key-auth `keys`, csrf `key`).
 */
const CONFIG_KEY_EXEMPT_WORDS = /^(auth|cookie|session|private|ticket|signature)$/;

/** A key or a header map: every string value under it is a header value keyed by its name. */
const HEADER_MAP_KEY = /(^|[_-])headers$/;
/** Keys inside a header map that group header names: proxy-rewrite `headers.set`, `headers.add`. */
const HEADER_GROUP_KEY = /^(set|add|append|remove|delete|hide|override|replace)$/;

/**
 * Header names whose configured values are shown to a read token. Every other
 * configured header value is masked unless it is made only of references:
 * a header a policy injects is often a credential under an innocent name.
 */
const HARMLESS_HEADERS = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'accept-ranges',
  'age',
  'allow',
  'cache-control',
  'connection',
  'content-disposition',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-security-policy',
  'content-type',
  'cross-origin-embedder-policy',
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'etag',
  'expires',
  'host',
  'keep-alive',
  'last-modified',
  'link',
  'location',
  'permissions-policy',
  'pragma',
  'referrer-policy',
  'retry-after',
  'server',
  'strict-transport-security',
  'user-agent',
  'vary',
  'via',
  'x-cache',
  'x-content-type-options',
  'x-correlation-id',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-proto',
  'x-frame-options',
  'x-powered-by',
  'x-real-ip',
  'x-request-id',
  'x-xss-protection',
]);

const harmlessHeader = (name: string): boolean => {
  const n = name.toLowerCase();
  return (HARMLESS_HEADERS.has(n) || n.startsWith('access-control-')) && !isSecretName(n);
};

/** `scheme://user:password@host` and `scheme://token@host`: the userinfo secret of a URL. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:?#]*)(?::([^\s/@?#]*))?@/gi;
/** `?name=value` / `&name=value` pairs of a URL-looking string. */
const QUERY_PAIR = /([?&])([^=&#\s]+)=([^&#\s]*)/g;

/**
 * Masks the credentials a URL carries, wherever it appears in a string:
 * the password of `user:password@` (or the whole userinfo when it has no
 * `:`, a token used as user name) and query values under secret names
 * (`?password=…`, `&access_token=…`). Placeholders stay visible.
 *
 * @example
 * maskUrlCredentials('redis://:PW@127.0.0.1:6379/0'); // 'redis://:<redacted>@127.0.0.1:6379/0'
 */
export function maskUrlCredentials(text: string): string {
  if (!text.includes('://')) return text;
  const visible = (v: string) => v === '' || PLACEHOLDER.test(v);
  const masked = text.replace(URL_USERINFO, (match, scheme: string, user: string, password?: string) => {
    if (password === undefined) return visible(user) ? match : `${scheme}${REDACTED}@`;
    return visible(password) ? match : `${scheme}${user}:${REDACTED}@`;
  });
  return masked.replace(QUERY_PAIR, (match, sep: string, name: string, value: string) =>
    isSecretName(decodeSafe(name)) && !visible(value) ? `${sep}${name}=${REDACTED}` : match,
  );
}

function decodeSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether a config key names a secret value (see CONFIG_KEY_EXEMPT_WORDS and ADDRESS_KEY). */
export function isSecretConfigKey(key: string, redaction?: Redaction): boolean {
  const k = key.toLowerCase();
  const header = HEADER_KEY.exec(k);
  if (header !== null) return isSecretName(header[1] as string) || /(^|[-_])keys?$/.test(header[1] as string);
  if (ADDRESS_KEY.test(k)) return false;
  if (redaction?.messageKey(k) === true && !exemptOnly(k)) return true;
  if (/(^|[-_])keys?$/.test(k)) return true;
  return isSecretName(k) && !exemptOnly(k);
}

/** True when the only secret word in the key is one that names a feature (`auth_plugins`). */
function exemptOnly(k: string): boolean {
  const words = k.split(/[-_.]/);
  const strict = words.filter((w) => !CONFIG_KEY_EXEMPT_WORDS.test(w)).join('_');
  return words.some((w) => CONFIG_KEY_EXEMPT_WORDS.test(w)) && !isSecretName(strict);
}

/** `headerName`: the value must be a header name to be shown (a `*_header` key, see HEADER_KEY). */
type Mode = 'plain' | 'secret' | 'headers' | 'headerName';

/**
 * Masks secret values in configuration shown to anyone but the config
 * author (MCP read tokens; the Admin API's future viewer role). Three rules:
 *
 * 1. every string under a secret key (`password`, `client_secret`, `keys`,
 *    `apikey`, … see `isSecretConfigKey`) becomes `<redacted>`;
 * 2. a string under a header map (`headers`, `response_headers`,
 *    `headers.set`, …) becomes `<redacted>` unless its header name is
 *    known-harmless (`content-type`, `cache-control`, …) — the value, not the
 *    name, decides whether an injected header is a credential;
 * 3. URL credentials anywhere (`redis://:PW@host`, `?password=…`) are masked
 *    inside the string.
 *
 * A whole `${NAME}` placeholder and a value made only of references
 * (`$remote_addr`, `{{request.headers.x}}`) are shown: they hold no literal.
 * `redaction` adds `debug.redact_message_keys` to the secret keys.
 */
export function maskSecrets<T>(value: T, redaction?: Redaction): T {
  return walk(value, redaction, 'plain', undefined, maskString) as T;
}

type Leaf = (value: string, mode: Mode, headerName: string | undefined) => string;

function walk(
  value: unknown,
  redaction: Redaction | undefined,
  mode: Mode,
  name: string | undefined,
  leaf: Leaf,
): unknown {
  if (typeof value === 'string') return leaf(value, mode, name);
  if (Array.isArray(value)) return value.map((v) => walk(v, redaction, mode, name, leaf));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  // `[{name: x-a, value: v}]` header lists: the sibling `name` is the header name.
  const listed = mode === 'headers' ? (value as Record<string, unknown>)['name'] : undefined;
  const out: Record<string, unknown> = {};
  for (const [key, v] of entries) {
    let next: Mode = mode;
    let headerName: string | undefined = key;
    if (mode === 'secret' || isSecretConfigKey(key, redaction)) next = 'secret';
    else if (mode === 'headers') {
      if (key === 'value' && typeof listed === 'string') headerName = listed;
      else if (key === 'name' || HEADER_GROUP_KEY.test(key) || HEADER_MAP_KEY.test(key))
        headerName = undefined;
    } else if (HEADER_KEY.test(key.toLowerCase())) next = 'headerName';
    else if (HEADER_MAP_KEY.test(key.toLowerCase())) {
      next = 'headers';
      headerName = undefined;
    }
    out[key] = walk(v, redaction, next, headerName, leaf);
  }
  return out;
}

/** A value the masking rules treat as secret (whether or not it is shown, as a bare reference is). */
const sensitive = (value: string, mode: Mode, headerName: string | undefined): boolean =>
  mode === 'secret' ||
  (mode === 'headerName' && !HEADER_NAME.test(value)) ||
  (mode === 'headers' && headerName !== undefined && !harmlessHeader(headerName));

function maskString(value: string, mode: Mode, headerName: string | undefined): string {
  if (PLACEHOLDER.test(value)) return value;
  // Under a header map a string without a header name is itself a name (`remove: [x-a]`).
  if (sensitive(value, mode, headerName)) return REFERENCES_ONLY.test(value) ? value : REDACTED;
  return maskUrlCredentials(value);
}

/** Shorter secrets are only scrubbed where they are a whole value, never inside text. */
const MIN_SCRUB_INSIDE = 6;

/**
 * The values that `maskSecrets` hides in `config`, as they appear at run
 * time: each secret literal, its `${…}`-resolved form, and the value of every
 * environment variable a secret value or injected header reads (so a
 * `x-tenant: {{env.TENANT_KEY}}` header is known by its rendered value).
 * Traces shown to a read token are scrubbed of these (`scrubSecretLiterals`).
 */
export function secretLiterals(config: unknown, env: NodeJS.ProcessEnv, redaction?: Redaction): Set<string> {
  const found = new Set<string>();
  const add = (v: string | undefined): void => {
    if (v !== undefined && v !== '' && v !== REDACTED) found.add(v);
  };
  const collect = (v: string): void => {
    if (!REFERENCES_ONLY.test(v) && !PLACEHOLDER.test(v)) add(v);
    add(interpolateEnv(v, env));
    for (const name of environmentVariableNames(v)) add(env[name]);
  };
  walk(config, redaction, 'plain', undefined, (value, mode, headerName) => {
    if (sensitive(value, mode, headerName)) collect(value);
    else if (value.includes('://'))
      for (const m of value.matchAll(URL_USERINFO)) collect((m[3] ?? m[2]) as string);
    return value;
  });
  return found;
}

/** Replaces every secret literal in a JSON-like value (whole strings, or inside longer text) with `<redacted>`. */
export function scrubSecretLiterals<T>(value: T, literals: ReadonlySet<string>): T {
  if (literals.size === 0) return value;
  const inside = [...literals]
    .filter((l) => l.length >= MIN_SCRUB_INSIDE)
    .sort((a, b) => b.length - a.length);
  const scrub = (v: unknown): unknown => {
    if (typeof v === 'string') {
      if (literals.has(v)) return REDACTED;
      let out = v;
      for (const literal of inside) if (out.includes(literal)) out = out.split(literal).join(REDACTED);
      return out;
    }
    if (Array.isArray(v)) return v.map(scrub);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) out[k] = scrub(item);
    return out;
  };
  return scrub(value) as T;
}

/**
 * The inverse for writes: an agent that read a masked item and sends it back
 * must not overwrite the secret with the marker. Every `<redacted>` string
 * (or a string that masks exactly like the stored one, such as
 * `redis://:<redacted>@host`) is replaced by the value at the same path of
 * the stored item; a marker with nothing stored behind it is returned in
 * `missing` so the write can be refused.
 */
export function restoreSecrets(incoming: unknown, stored: unknown): { value: unknown; missing: string[] } {
  const missing: string[] = [];
  const value = restore(incoming, stored, '', missing);
  return { value, missing };
}

function restore(incoming: unknown, stored: unknown, path: string, missing: string[]): unknown {
  if (typeof incoming === 'string' && incoming.includes(REDACTED)) {
    if (typeof stored === 'string' && (incoming === REDACTED || maskUrlCredentials(stored) === incoming))
      return stored;
    missing.push(path === '' ? '(root)' : path);
    return incoming;
  }
  if (Array.isArray(incoming)) {
    const before = Array.isArray(stored) ? stored : [];
    return incoming.map((v, i) => restore(v, before[i], `${path}[${i}]`, missing));
  }
  if (incoming === null || typeof incoming !== 'object') return incoming;
  const before =
    stored !== null && typeof stored === 'object' && !Array.isArray(stored)
      ? (stored as Record<string, unknown>)
      : {};
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(incoming as Record<string, unknown>)) {
    out[key] = restore(v, before[key], path === '' ? key : `${path}.${key}`, missing);
  }
  return out;
}
