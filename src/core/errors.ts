/**
 * The one catalog of node error codes. Codes are public API: tests, error
 * handlers and dashboards match on them, never on message wording.
 */
export const ERROR_CODES = {
  UPSTREAM_REQUEST_BUILD_ERROR: { status: 502, error: 'bad_gateway' },
  UPSTREAM_CONNECTION_ERROR: { status: 502, error: 'bad_gateway' },
  UPSTREAM_BODY_READ_ERROR: { status: 502, error: 'bad_gateway' },
  UPSTREAM_TIMEOUT: { status: 504, error: 'gateway_timeout' },
  UPSTREAM_NO_HEALTHY_TARGET: { status: 502, error: 'bad_gateway' },
  /** The client went away before the upstream answered; nginx's 499, never seen by that client. */
  UPSTREAM_CLIENT_ABORTED: { status: 499, error: 'client_closed_request' },
  PLUGIN_ERROR: { status: 500, error: 'internal_error' },
  /** body-transformer: the body is not valid JSON/XML (400 request side, 502 response side). */
  BODY_DECODE_FAILED: { status: 400, error: 'body_decode_failed' },
  /** degraphql: only GET and POST can carry the GraphQL variables. */
  METHOD_NOT_ALLOWED: { status: 405, error: 'method_not_allowed' },
  /** degraphql: the request body is needed for variables and is not JSON. */
  INVALID_REQUEST_BODY: { status: 400, error: 'invalid_request_body' },
  TRAFFIC_SPLIT_UPSTREAM_ERROR: { status: 502, error: 'bad_gateway' },
  /** forward-auth: the auth service was unreachable or too slow (a provider failure, not a denial). */
  FORWARD_AUTH_ERROR: { status: 502, error: 'provider_error' },
  /** Function-as-a-service callouts: 504 past `timeout`, 503 connect/exchange failure (the default), 502 unbuildable request. */
  CLOUD_FUNCTION_CALLOUT_ERROR: { status: 503, error: 'service_unavailable' },
  AZURE_FUNCTIONS_CALLOUT_ERROR: { status: 503, error: 'service_unavailable' },
  OPENWHISK_CALLOUT_ERROR: { status: 503, error: 'service_unavailable' },
  OPENFUNCTION_CALLOUT_ERROR: { status: 503, error: 'service_unavailable' },
  /** Lua script nodes (script, serverless-*); no status is fixed for them, so they are plain 500s. */
  LUA_LOAD_ERROR: { status: 500, error: 'internal_error' },
  LUA_MARSHAL_ERROR: { status: 500, error: 'internal_error' },
  LUA_MISSING_EXECUTE: { status: 500, error: 'internal_error' },
  LUA_EXECUTION_ERROR: { status: 500, error: 'internal_error' },
  LUA_UNMARSHAL_ERROR: { status: 500, error: 'internal_error' },
  LUA_BAD_PORT: { status: 500, error: 'internal_error' },
  LUA_TIMEOUT: { status: 500, error: 'internal_error' },
  /** A script call held more than its `memory_limit_mb`. */
  LUA_MEMORY_LIMIT: { status: 500, error: 'internal_error' },
  /** Store nodes: the store was unreachable, too slow or refused the command; never a miss. */
  STORE_ERROR: { status: 503, error: 'service_unavailable' },
  /** Store nodes: the templated key rendered empty (every request would share one key). */
  STORE_KEY_INVALID: { status: 500, error: 'internal_error' },
  /** Store nodes: the stored value is not JSON (`json: true`) or not an integer (store-incr). */
  STORE_VALUE_INVALID: { status: 500, error: 'internal_error' },
  /** cas-auth: CAS unreachable, too slow, or answering other than 200 (docs/plugins/cas-auth.md; 401 before 0.8). */
  CAS_AUTH_PROVIDER_ERROR: { status: 502, error: 'provider_error' },
  /** Authorization-server and code-exchange callouts: unreachable, too slow, or no decision in the answer. */
  OPA_ERROR: { status: 502, error: 'provider_error' },
  AUTHZ_KEYCLOAK_ERROR: { status: 502, error: 'provider_error' },
  AUTHZ_CASDOOR_ERROR: { status: 502, error: 'provider_error' },
  WOLF_RBAC_UPSTREAM_ERROR: { status: 502, error: 'provider_error' },
  DINGTALK_UPSTREAM_ERROR: { status: 502, error: 'provider_error' },
  FEISHU_UPSTREAM_ERROR: { status: 502, error: 'provider_error' },
  /** openid-connect: discovery, JWKS, introspection or token endpoint unreachable, too slow, non-2xx or unparseable. */
  OIDC_PROVIDER_ERROR: { status: 502, error: 'provider_error' },
  /** ldap-auth: the directory could not be asked (transport, TLS, timeout); formerly LDAP_AUTH_FAILED. */
  LDAP_AUTH_PROVIDER_ERROR: { status: 502, error: 'provider_error' },
  /** Interactive auth with `kvstore` sessions: the session store failed; never a 401 (no login loop). */
  SESSION_STORE_ERROR: { status: 503, error: 'service_unavailable' },
  /** limit-count: the counter store failed and `allow_degradation` is off (fail closed). */
  RATE_LIMIT_UNAVAILABLE: { status: 500, error: 'internal_error' },
  /** workflow: the store behind a limit-count action failed and `allow_degradation` is off. */
  RATE_LIMIT_ERROR: { status: 500, error: 'internal_error' },
  /** proxy-cache `phase: purge`: the backend could not be purged (reads degrade to a miss; purges report). */
  CACHE_PURGE_FAILED: { status: 502, error: 'cache_purge_failed' },
  /** The request already passed through this gateway `listener.max_hops` times (its own Via entry): a proxy loop. */
  PROXY_LOOP_DETECTED: { status: 508, error: 'loop_detected' },
  /** ai-proxy: every target failed (429, 5xx, timeout, connection); 503/504 by the last failure (docs/plugins/ai-proxy.md). */
  AI_PROVIDER_ERROR: { status: 502, error: 'bad_gateway' },
  /** ai-proxy: the request is not an OpenAI or Anthropic request it can read (path, JSON, messages). */
  AI_REQUEST_INVALID: { status: 400, error: 'invalid_request_error' },
  /** mcp-proxy: every upstream MCP server is down for the request (docs/plugins/mcp-proxy.md). */
  MCP_UPSTREAM_UNAVAILABLE: { status: 502, error: 'bad_gateway' },
  /** mcp-tool: a JSON-RPC batch carrying tools/call, which would pass per-tool limits (docs/plugins/mcp-tool.md). */
  MCP_REQUEST_REFUSED: { status: 400, error: 'invalid_request_error' },
} as const satisfies Record<string, { status: number; error: string }>;

export type KnownErrorCode = keyof typeof ERROR_CODES;

declare const customCode: unique symbol;
/** A code outside the catalog, made with {@link customErrorCode}. */
export type CustomErrorCode = string & { readonly [customCode]: true };

/**
 * Marks a code of your own (a plugin outside this repository, docs/plugin-authoring.md): catalog
 * codes are typed, so a misspelt one does not compile, and anything else must say it is deliberate.
 */
export function customErrorCode(code: string): CustomErrorCode {
  return code as CustomErrorCode;
}

/**
 * Thrown (or rejected) by a node's `run` to leave through its `error` port.
 * The engine turns it into an `ctx.errors` record and, unless the node already
 * prepared one, a JSON response `{error, message}` with `status`.
 */
export class NodeError extends Error {
  readonly code: string;
  readonly status: number;
  readonly error: string;
  readonly metadata: Record<string, unknown>;
  /** True when the node already wrote the response it wants the client to see. */
  readonly responsePrepared: boolean;

  constructor(
    code: KnownErrorCode | CustomErrorCode,
    message: string,
    options: {
      status?: number;
      error?: string;
      metadata?: Record<string, unknown>;
      responsePrepared?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const known = (ERROR_CODES as Record<string, { status: number; error: string } | undefined>)[code];
    this.name = 'NodeError';
    this.code = code;
    this.status = options.status ?? known?.status ?? 500;
    this.error = options.error ?? known?.error ?? 'internal_error';
    this.metadata = options.metadata ?? {};
    this.responsePrepared = options.responsePrepared ?? false;
  }
}

/** The generic fallback of docs/configuration.md#errors-at-run-time when no error edge and no error_handler catch a failure. */
export const UNHANDLED_ERROR_BODY = {
  error: 'internal_error',
  message: 'Unhandled error in routing policy',
} as const;

/**
 * An unhandled failure to reach or hear from the upstream (the catalog's
 * `bad_gateway`/`gateway_timeout` codes, e.g. UPSTREAM_CONNECTION_ERROR,
 * UPSTREAM_TIMEOUT) answers 502/504 with the code instead of the generic 500,
 * as operators of other gateways expect (docs/configuration.md "Errors at run time").
 */
export function unhandledUpstreamBody(
  code: string,
): { status: number; body: { error: string; code: string; message: string } } | undefined {
  const known = (ERROR_CODES as Record<string, { status: number; error: string } | undefined>)[code];
  if (known === undefined || (known.error !== 'bad_gateway' && known.error !== 'gateway_timeout'))
    return undefined;
  return { status: known.status, body: { error: known.error, code, message: UNHANDLED_ERROR_BODY.message } };
}

/** docs/routing.md#matching: the answer when no route matches. */
export const NO_ROUTE_BODY = { error: 'not_found', message: 'No route matched' } as const;

/** Answered before routing when a request comes back to this gateway too often (see src/outbound/via.ts). */
export const PROXY_LOOP_BODY = {
  error: 'loop_detected',
  code: 'PROXY_LOOP_DETECTED',
  message:
    'The request has passed through this gateway listener.max_hops times (Via); an upstream points back at it',
} as const;

/** A request the gateway refuses before any policy runs: bad target, Host, header or HTTP/2 pseudo-header. */
export function badRequestBody(message: string): { error: 'bad_request'; message: string } {
  return { error: 'bad_request', message };
}

/** A buffered request body over `listener.max_body_bytes` (docs/routing.md#request-bodies). */
export function payloadTooLargeBody(message: string): { error: 'payload_too_large'; message: string } {
  return { error: 'payload_too_large', message };
}

/** A policy answer that cannot be written to the client (bad status or header). */
export function invalidResponseBody(message: string): { error: 'bad_gateway'; message: string } {
  return { error: 'bad_gateway', message: `invalid response: ${message}` };
}

/** An HTTP/1.1 `Upgrade` other than websocket on a request that cannot be served without it. */
export const UNSUPPORTED_UPGRADE_BODY = {
  error: 'bad_request',
  message: 'only websocket upgrades are supported',
} as const;

/** An HTTP/2 request body that did not arrive within the listener's request timeout (408). */
export const REQUEST_TIMEOUT_BODY = {
  error: 'request_timeout',
  message: 'request body not received in time',
} as const;

/**
 * The `error` codes the Admin API answers, each with its one status (docs/admin-api.md#error-codes,
 * kept level with this list by test/docs/admin-error-catalogue.test.ts). `sandbox_timeout` comes from
 * the debug sandbox that `POST /api/debug/sandbox` runs.
 */
export const ADMIN_ERROR_STATUS = {
  bad_request: 400,
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  origin_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  in_progress: 409,
  in_use: 409,
  read_only_source: 409,
  precondition_failed: 412,
  config_too_large: 413,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  too_many_failed_logins: 429,
  internal_error: 500,
  acme_disabled: 501,
  cache_purge_failed: 502,
  store_unavailable: 502,
  config_store_unavailable: 503,
  sandbox_timeout: 504,
  store_timeout: 504,
} as const satisfies Record<string, number>;

export type AdminErrorCode = keyof typeof ADMIN_ERROR_STATUS;

/** An Admin API error body: `{"error": code}` then `fields` in their order. */
export function adminErrorBody<C extends AdminErrorCode, F extends Record<string, unknown>>(
  code: C,
  fields?: F,
): { error: C } & F {
  return { error: code, ...fields } as { error: C } & F;
}

/**
 * An Admin API error body whose `error` is a sentence naming the problem rather than a code: a
 * rejected configuration (400, or 500 on reload, with `details`), a name already taken (409).
 */
export function adminProblemBody(
  problem: string,
  details?: unknown,
): { error: string } | { error: string; details: unknown } {
  return details === undefined ? { error: problem } : { error: problem, details };
}

/** A request refused before routing (on HTTP/1.1 with `Connection: close`, as nginx answers). */
export interface RequestRefusal {
  status: number;
  error: string;
  message: string;
}

/** The RFC 9112 refusals both HTTP/1.1 fronts apply (src/server/request-checks.ts decides which). */
export const REQUEST_REFUSALS = {
  notImplemented: {
    status: 501,
    error: 'not_implemented',
    message: 'transfer codings other than a lone chunked are not supported',
  },
  repeatedTransferEncoding: {
    status: 400,
    error: 'bad_request',
    message: 'more than one Transfer-Encoding header',
  },
  transferEncodingOnHttp10: {
    status: 400,
    error: 'bad_request',
    message: 'Transfer-Encoding on an HTTP/1.0 request',
  },
  version: {
    status: 505,
    error: 'http_version_not_supported',
    message: 'only HTTP/1.x is served in HTTP/1 syntax',
  },
  trace: { status: 405, error: 'method_not_allowed', message: 'TRACE is not allowed (listener.allow_trace)' },
  underscore: {
    status: 400,
    error: 'bad_request',
    message: 'header names with an underscore are refused (listener.headers_with_underscores)',
  },
} as const satisfies Record<string, RequestRefusal>;
