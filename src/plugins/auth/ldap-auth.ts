import { isIP } from 'node:net';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { calloutTls, calloutTlsSchema } from '../callout-tls.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { escapeDnValue, simpleBind, type LdapTarget } from './ldap-bind.js';
import { AUTH_OUTPUTS, quoteRealm, requestHeader, unauthorized } from './shared.js';

/** RFC 4512 attribute type: a descriptor or a numeric OID. */
const ATTRIBUTE_TYPE = /^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)+)$/;

/**
 * HTTP Basic credentials checked by a simple bind as
 * `<uid>=<username>,<base_dn>`. A refused bind is a denial (401 with a Basic
 * challenge); a directory that cannot be asked is a provider failure (502,
 * `LDAP_AUTH_PROVIDER_ERROR`), never a 401.
 *
 * @example
 * ```yaml
 * - id: auth
 *   type: ldap-auth
 *   config:
 *     ldap_uri: ldap://ldap.internal:389
 *     base_dn: ou=people,dc=example,dc=org
 *     uid: uid
 * ```
 */
export const ldapAuth = definePlugin({
  type: 'ldap-auth',
  category: 'auth',
  description: 'Check HTTP Basic credentials with an LDAP simple bind.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['base_dn', 'ldap_uri'],
    properties: {
      base_dn: { type: 'string', description: 'The bind DN is <uid>=<username>,<base_dn>.' },
      ldap_uri: { type: 'string', description: 'ldap://host:port or ldaps://host:port.' },
      uid: { type: 'string', default: 'cn', description: 'RDN attribute that carries the username.' },
      use_tls: { type: 'boolean', default: false, description: 'StartTLS before binding (ldap:// only).' },
      tls_verify: { type: 'boolean', default: true, description: "Verify the directory's certificate." },
      tls: calloutTlsSchema,
      realm: { type: 'string', default: 'ldap', description: 'Realm of the Basic challenge.' },
      timeout_ms: {
        type: 'number',
        exclusiveMinimum: 0,
        default: 10000,
        description: 'Deadline for connect, StartTLS and bind together.',
      },
    },
  },
  outputs: AUTH_OUTPUTS,
  templated: [],
  create(config, env) {
    const url = parseLdapUri(config.ldap_uri);
    const baseDn = config.base_dn.trim();
    if (baseDn === '') throw new ConfigError('base_dn', 'must not be blank');
    const uid = config.uid.trim();
    if (!ATTRIBUTE_TYPE.test(uid)) throw new ConfigError('uid', `'${config.uid}' is not an attribute name`);
    const secure = url.protocol === 'ldaps:';
    if (secure && config.use_tls) {
      env.warn('use_tls', 'ignored: an ldaps:// connection is already TLS (StartTLS is for ldap://)');
    }
    const material = calloutTls(config.tls_verify, config.tls, 'tls', 'tls_verify');
    // SNI carries host names only; an IP literal is checked against the certificate's IP SANs.
    const servername =
      material.servername ?? (isIP(url.hostname.replace(/^\[|\]$/g, '')) === 0 ? url.hostname : undefined);
    const target: LdapTarget = {
      url: `${url.protocol}//${url.host}`,
      startTls: config.use_tls && !secure,
      // Built per connection: a replaced client pair is presented by the next bind (docs/outbound-tls.md).
      get tls() {
        const cert = material.cert;
        return {
          rejectUnauthorized: material.rejectUnauthorized,
          ...(servername === undefined ? {} : { servername }),
          ...(material.ca === undefined ? {} : { ca: material.ca }),
          ...(cert === undefined ? {} : { cert, key: material.key }),
        };
      },
      timeoutMs: config.timeout_ms,
    };
    const challenge = `Basic realm=${quoteRealm(config.realm)}`;

    const bind = async (ctx: Context, username: string, password: string): Promise<'success' | 'denied'> => {
      const outcome = await simpleBind(
        target,
        `${uid}=${escapeDnValue(username)},${baseDn}`,
        password,
        ctx.signal,
      );
      switch (outcome.kind) {
        case 'bound':
          ctx.message['user'] = username;
          ctx.setConsumer({ name: username });
          return 'success';
        case 'refused':
          return unauthorized(ctx, 'Invalid credentials', challenge);
        case 'aborted':
          throw new NodeError('UPSTREAM_CLIENT_ABORTED', 'client closed the request during the LDAP bind');
        case 'unavailable':
          // docs/plugins/ldap-auth.md: 502 provider_error, no challenge header.
          throw new NodeError('LDAP_AUTH_PROVIDER_ERROR', `LDAP bind failed: ${outcome.reason}`, {
            metadata: { ldap_uri: target.url },
          });
      }
    };

    return {
      run(ctx) {
        const pair = basicCredentials(requestHeader(ctx, 'authorization'));
        if (pair === undefined) return unauthorized(ctx, 'Missing or malformed Basic credentials', challenge);
        const [username, password] = pair;
        // An empty password is an unauthenticated bind, which many directories accept for anyone.
        if (username === '' || password === '') return unauthorized(ctx, 'Invalid credentials', challenge);
        return bind(ctx, username, password);
      },
    };
  },
});

function parseLdapUri(raw: string): URL {
  const text = raw.trim();
  if (text === '') throw new ConfigError('ldap_uri', 'must not be blank');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError('ldap_uri', `'${text}' is not an ldap:// or ldaps:// URI`);
  }
  if (url.protocol !== 'ldap:' && url.protocol !== 'ldaps:') {
    throw new ConfigError('ldap_uri', `must be an ldap:// or ldaps:// URI (got ${url.protocol})`);
  }
  if (url.hostname === '') throw new ConfigError('ldap_uri', 'names no host');
  if (url.port === '') url.port = url.protocol === 'ldaps:' ? '636' : '389';
  return url;
}

/** `Authorization: Basic base64(user:pass)`; the username is trimmed, the password kept as sent. */
function basicCredentials(header: string | undefined): [string, string] | undefined {
  if (header === undefined || header.length < 6 || header.slice(0, 6).toLowerCase() !== 'basic ') {
    return undefined;
  }
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : [decoded.slice(0, colon).trim(), decoded.slice(colon + 1)];
}
