import type { DebugConfig } from '../config/system.js';

/** What every redacted value becomes in a trace. */
export const REDACTED = '<redacted>';

/** Header names always redacted (docs/debugging.md#reading-a-trace); configured names add to these, never replace them. */
export const BUILTIN_REDACT_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'api-key',
  'apikey',
  'x-auth-token',
  'x-access-token',
  'x-csrf-token',
  'x-amz-security-token',
  'x-forwarded-client-cert',
];

/** Query parameters always redacted: OAuth and OIDC carry codes and tokens in the query. */
export const BUILTIN_REDACT_QUERY_PARAMS: readonly string[] = [
  'access_token',
  'id_token',
  'refresh_token',
  'token',
  'api_key',
  'apikey',
  'code',
  'client_secret',
  'state',
];

/**
 * Substrings that mark a `message` key as secret. The message map is free-form,
 * so matching by substring is the only rule that scales to unknown writers.
 */
export const BUILTIN_REDACT_MESSAGE_SUBSTRINGS: readonly string[] = [
  'secret',
  'password',
  'passwd',
  'token',
  'credential',
  'private_key',
  'authorization',
  'jwt',
];

/**
 * Substrings that mark any header, query parameter or message key as secret,
 * on top of the lists above: a name-list alone kept `x-secret-header`,
 * `private-token`, `x-auth` and `?password=` (review L2).
 */
export const SECRET_NAME_SUBSTRINGS: readonly string[] = [
  'secret',
  'passw',
  'passwd',
  'pwd',
  'token',
  'credential',
  'auth',
  'cookie',
  'session',
  'signature',
  'jwt',
  'bearer',
  'apikey',
  'accesskey',
  'secretkey',
  'private',
  'csrf',
  'xsrf',
  'ticket',
];

/** A name whose last word is `key`/`keys`/`sig` (`x-api-key`, `hmac_key`); `key_id` is not a secret. */
const SECRET_LAST_WORD = /(^|[-_.\s])(keys?|sig|pin|otp|pass)$/;
/** Prefixes of header families that carry credentials (`x-api-*`, `api-*`, `private-*`). */
const SECRET_PREFIX = /^(x-api-|api-|private-)/;

/**
 * The pattern rule behind every redaction and config mask: case-insensitive,
 * a name is secret when it contains a secret word (`SECRET_NAME_SUBSTRINGS`),
 * ends in the word `key`/`keys`/`sig`/`pin`/`otp`/`pass`, or starts with
 * `x-api-`, `api-` or `private-`.
 *
 * @example
 * isSecretName('X-Upstream-Auth'); // true
 * isSecretName('consumer.key_id'); // false
 */
export function isSecretName(name: string): boolean {
  const n = name.toLowerCase();
  return (
    SECRET_NAME_SUBSTRINGS.some((s) => n.includes(s)) || SECRET_LAST_WORD.test(n) || SECRET_PREFIX.test(n)
  );
}

/** Case-insensitive denylists and patterns applied when a snapshot is captured, never later. */
export interface Redaction {
  header(name: string): boolean;
  queryParam(name: string): boolean;
  messageKey(key: string): boolean;
  /** The effective lists, for `GET /api/debug/config`. */
  describe(): {
    headers: string[];
    query_params: string[];
    message_keys: string[];
    message_key_substrings: string[];
    /** The pattern rule that applies to headers, query parameters and message keys alike. */
    name_patterns: { substrings: string[]; last_words: string[]; prefixes: string[] };
  };
}

export function createRedaction(
  config: Pick<DebugConfig, 'redact_headers' | 'redact_query_params' | 'redact_message_keys'>,
): Redaction {
  const lower = (names: readonly string[]) => names.map((n) => n.toLowerCase());
  const headers = new Set([...BUILTIN_REDACT_HEADERS, ...lower(config.redact_headers)]);
  const query = new Set([...BUILTIN_REDACT_QUERY_PARAMS, ...lower(config.redact_query_params)]);
  const messageKeys = new Set(lower(config.redact_message_keys));
  return {
    // Header names in a Context are already lowercase; the fallback covers sandbox input.
    header: (name) => headers.has(name) || headers.has(name.toLowerCase()) || isSecretName(name),
    queryParam: (name) => query.has(name.toLowerCase()) || isSecretName(name),
    messageKey(key) {
      const k = key.toLowerCase();
      return (
        messageKeys.has(k) || BUILTIN_REDACT_MESSAGE_SUBSTRINGS.some((s) => k.includes(s)) || isSecretName(k)
      );
    },
    describe: () => ({
      headers: [...headers],
      query_params: [...query],
      message_keys: [...messageKeys],
      message_key_substrings: [...BUILTIN_REDACT_MESSAGE_SUBSTRINGS],
      name_patterns: {
        substrings: [...SECRET_NAME_SUBSTRINGS],
        last_words: ['key', 'keys', 'sig', 'pin', 'otp', 'pass'],
        prefixes: ['x-api-', 'api-', 'private-'],
      },
    }),
  };
}
