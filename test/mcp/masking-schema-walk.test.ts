import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maskSecrets } from '../../src/admin/mcp/secrets.js';
import { registry } from '../../src/plugins/index.js';

/**
 * F-5: walks the JSON Schema of every registered node type and checks that every string the schema
 * allows under a credential-shaped key is masked by `maskSecrets`, the one masker behind viewer
 * replies (src/admin/viewer.ts), `/api/config/export`, and the MCP read tools (`get_*`,
 * `export_config`, `get_trace_step.node_config`).
 */

/**
 * The credential shape, decided here and not borrowed from the masker: a key holding a secret
 * word (`password`, `passwd`, `pwd`, `secret`, `token`, `credential`, `private`, `apikey`,
 * `accesskey`, `auth`/`authorization`, `cookie`, `session`, `signature`, `bearer`, `jwt`,
 * `csrf`, `ticket`), a word `key`/`keys`/`sig`/`pin`/`otp`/`pass`, or ending in `_header`
 * (such a key may hold a header's value: http-logger `auth_header`).
 */
const SECRET_SUBSTRINGS =
  /passw|passwd|pwd|secret|token|credential|private|apikey|api_key|accesskey|auth|cookie|session|signature|bearer|jwt|csrf|xsrf|ticket/;
const SECRET_WORDS = new Set(['key', 'keys', 'sig', 'pin', 'otp', 'pass']);

const credentialShaped = (key: string): boolean => {
  const k = key.toLowerCase();
  return SECRET_SUBSTRINGS.test(k) || k.split(/[-_.]/).some((w) => SECRET_WORDS.has(w)) || /_header$/.test(k);
};

/**
 * Credential-shaped keys that deliberately stay visible, each with the reason. A key listed here
 * must still exist in some schema (a stale entry fails), so the list cannot silently grow old.
 */
const NOT_SECRET: Record<string, string> = {
  access_key_id: 'sls-logger: the public identifier of an access key pair (its secret is access_key_secret)',
  access_token_url: 'an address (dingtalk/feishu token endpoint)',
  auth_file: 'a file path; the file holds the credential, not the config',
  auth_redirect_uri: 'an address',
  authorization_endpoint: 'an OIDC address',
  cookie_name: 'names a cookie',
  key_claim_name: 'names a JWT claim',
  key_file: 'a file path (TLS key on disk)',
  client_key_path: 'a file path (TLS key on disk)',
  key_from: 'names the request attribute a rate key is taken from',
  session_cookie_name: 'names a cookie',
  session_cookie_path: 'a cookie path',
  session_store: 'names a store resource',
  ticket_param: 'cas-auth: names the query parameter',
  token_endpoint: 'an OAuth address',
  token_uri: 'an OAuth address',
  token_signing_alg_values_expected: 'algorithm names',
  // Each `*_header` key below is shown only while its value is a header name (the second test).
  forward_header: 'names a header (jwe-decrypt)',
  username_header: 'names a header (authz-casbin)',
  code_header: 'names a header (dingtalk/feishu)',
  cache_status_header: 'names a header (proxy-cache)',
};

/** `*_header` keys whose name-shaped value (a header name) is shown; any other value is masked. */
const NAMES_A_HEADER = /_header$/;

interface Leaf {
  /** Where the string sits, for messages: `auth_config.private_key`, `users[].password`. */
  path: string;
  /** The nearest named key above the string (array items and map entries keep their parent's). */
  key: string;
  /** Builds the smallest config holding `value` at this path. */
  build(value: string): unknown;
}

type Schema = Record<string, unknown>;

const MAP_ENTRY = 'api_key'; // every free-form map gets a credential-shaped entry name

/** Every string position a schema allows, through properties, items, maps and combinators. */
function leaves(schema: unknown, depth = 0): Leaf[] {
  if (schema === null || typeof schema !== 'object' || depth > 12) return [];
  const s = schema as Schema;
  const out: Leaf[] = [];
  for (const kw of ['oneOf', 'anyOf', 'allOf'] as const) {
    const list = s[kw];
    if (Array.isArray(list)) for (const branch of list) out.push(...leaves(branch, depth + 1));
  }
  for (const kw of ['then', 'else'] as const) out.push(...leaves(s[kw], depth + 1));
  const types = Array.isArray(s['type']) ? (s['type'] as string[]) : [s['type']];
  const fixed = s['enum'] !== undefined || s['const'] !== undefined;
  if (!fixed && (types.includes('string') || (s['type'] === undefined && s['properties'] === undefined)))
    out.push({ path: '', key: '', build: (v) => v });
  const props = s['properties'] as Record<string, unknown> | undefined;
  for (const [name, sub] of Object.entries(props ?? {}))
    for (const leaf of leaves(sub, depth + 1))
      out.push({
        path: leaf.path === '' ? name : leaf.path.startsWith('[') ? name + leaf.path : `${name}.${leaf.path}`,
        key: leaf.key === '' ? name : leaf.key,
        build: (v) => ({ [name]: leaf.build(v) }),
      });
  const maps = [s['additionalProperties'], ...Object.values((s['patternProperties'] as Schema) ?? {})];
  for (const sub of maps)
    for (const leaf of leaves(sub, depth + 1))
      out.push({
        path: leaf.path === '' ? `{${MAP_ENTRY}}` : `{${MAP_ENTRY}}.${leaf.path}`,
        key: leaf.key === '' ? MAP_ENTRY : leaf.key,
        build: (v) => ({ [MAP_ENTRY]: leaf.build(v) }),
      });
  for (const sub of [s['items'], ...((s['prefixItems'] as unknown[]) ?? [])])
    for (const leaf of leaves(sub, depth + 1))
      out.push({
        path: `[]${leaf.path === '' ? '' : `.${leaf.path}`}`,
        key: leaf.key,
        build: (v) => [leaf.build(v)],
      });
  return out;
}

/** The places a node's config is shown: inside a policy, as a plugin config, and alone (trace step). */
const views = (type: string, config: unknown): unknown[] => [
  { policies: [{ name: 'p', nodes: [{ id: 'n', type, config }] }] },
  { name: 'shared', type, config },
  config,
];

const secretLeaves = (): { type: string; leaf: Leaf }[] => {
  const found: { type: string; leaf: Leaf }[] = [];
  for (const [type, def] of registry)
    for (const leaf of leaves(def.schema))
      if (leaf.key !== '' && credentialShaped(leaf.key)) found.push({ type, leaf });
  return found;
};

test('F-5: every credential-shaped string of every node type schema is masked for viewers and read tokens', () => {
  const found = secretLeaves();
  assert.ok(registry.size > 50, `the registry lists ${registry.size} node types`);
  assert.ok(found.length > 50, `the walk found ${found.length} credential-shaped strings`);
  const leaks: string[] = [];
  let n = 0;
  for (const { type, leaf } of found) {
    if (NOT_SECRET[leaf.key] !== undefined) continue;
    // Not a header name (a space and `=`), so even the `*_header` rule must mask it.
    const canary = `Basic CANARY${++n}Zq9x=`;
    for (const view of views(type, leaf.build(canary)))
      if (JSON.stringify(maskSecrets(view)).includes(`CANARY${n}Zq9x`)) {
        leaks.push(`${type}: ${leaf.path}`);
        break;
      }
  }
  assert.deepEqual([...new Set(leaks)], [], 'credential-shaped keys shown in clear');
});

test('F-5: a *_header key shows a header name, and masks anything else (the value of a header)', () => {
  const headerKeys = secretLeaves().filter(({ leaf }) => NAMES_A_HEADER.test(leaf.key));
  assert.ok(
    headerKeys.some(({ type, leaf }) => type === 'http-logger' && leaf.key === 'auth_header'),
    'http-logger auth_header is walked',
  );
  for (const { type, leaf } of headerKeys) {
    const value = JSON.stringify(maskSecrets(leaf.build('Bearer HDRVALUE-123')));
    assert.doesNotMatch(value, /HDRVALUE/, `${type}: ${leaf.path} holding a value`);
  }
  // A key naming a header keeps a header name visible; one holding a credential never does.
  assert.deepEqual(maskSecrets({ code_header: 'x-code', cache_status_header: 'X-Cache-Status' }), {
    code_header: 'x-code',
    cache_status_header: 'X-Cache-Status',
  });
  assert.deepEqual(maskSecrets({ auth_header: 'QVVUSEhEUi1TRUNSRVQ' }), { auth_header: '<redacted>' });
  assert.deepEqual(maskSecrets({ auth_header: '${LOG_AUTH}' }), { auth_header: '${LOG_AUTH}' });
});

test('F-5: the allowlist of credential-shaped keys that are not secret names only keys the schemas have', () => {
  const keys = new Set(secretLeaves().map(({ leaf }) => leaf.key));
  const stale = Object.keys(NOT_SECRET).filter((k) => !keys.has(k));
  assert.deepEqual(stale, [], 'allowlisted keys no schema has any more');
});
