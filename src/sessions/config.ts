import type { Store } from '../stores/index.js';
import { ConfigError, type PluginEnv } from '../core/plugin.js';
import { COOKIE_NAME, type CookieSettings } from './cookie.js';
import type { SecretList } from './sealer.js';

/** The storage modes: `kvstore`, and the reference's spelling `redis` (docs/reference-compatibility.md). */
export type SessionStorage = 'cookie' | 'kvstore';

/** Everything a node needs to keep browser sessions; `undefined` means stateless. */
export interface SessionSettings {
  /** Rotation order: the first seals, every one opens (docs/sessions.md#rotating-the-secret). */
  secret: SecretList;
  storage: SessionStorage;
  /** Set for `kvstore`. */
  store: Store | undefined;
  cookie: CookieSettings;
}

/** Session keys as the interactive auth plugins accept them: nested and flat aliases. */
export interface SessionConfig {
  session?: {
    secret?: string | string[];
    storage?: string;
    store?: string;
    cookie?: { name?: string; path?: string; lifetime?: number };
  };
  session_secret?: string | string[];
  session_storage?: string;
  session_store?: string;
  session_cookie_name?: string;
  session_cookie_path?: string;
  session_cookie_lifetime?: number;
}

const storage = { type: 'string', enum: ['cookie', 'kvstore', 'redis'] } as const;
const lifetime = { type: 'number', exclusiveMinimum: 0 } as const;
const nonEmpty = { type: 'string', minLength: 1 } as const;
/** One secret, or a list for rotation (empty entries are refused with their index). */
const secretSchema = {
  anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1 }],
} as const;

/** Schema properties to spread into an interactive auth plugin's schema. */
export const sessionSchemaProperties = {
  session: {
    type: 'object',
    additionalProperties: false,
    description: 'Interactive browser sessions; a secret enables them.',
    properties: {
      secret: {
        ...secretSchema,
        description:
          'Key material (HKDF-derived), same on every instance; a list rotates: the first seals, any opens.',
      },
      storage: { ...storage, description: 'cookie (sealed into the cookie) or kvstore/redis (in `store`).' },
      store: { ...nonEmpty, description: 'stores: entry for kvstore storage.' },
      cookie: {
        type: 'object',
        additionalProperties: false,
        properties: { name: nonEmpty, path: nonEmpty, lifetime },
      },
    },
  },
  session_secret: { ...secretSchema, description: 'Alias of session.secret.' },
  session_storage: { ...storage, description: 'Alias of session.storage.' },
  session_store: { ...nonEmpty, description: 'Alias of session.store.' },
  session_cookie_name: { ...nonEmpty, description: 'Alias of session.cookie.name.' },
  session_cookie_path: { ...nonEmpty, description: 'Alias of session.cookie.path.' },
  session_cookie_lifetime: { ...lifetime, description: 'Alias of session.cookie.lifetime (seconds).' },
} as const;

export const DEFAULT_SESSION_LIFETIME = 3600;

/** The one value of a nested key and its flat alias; both set and different is a config error. */
function pick<T>(
  nested: T | undefined,
  flat: T | undefined,
  nestedPath: string,
  flatPath: string,
): [T | undefined, string] {
  if (nested !== undefined && flat !== undefined && JSON.stringify(nested) !== JSON.stringify(flat)) {
    throw new ConfigError(nestedPath, `conflicts with ${flatPath}; set one of them`);
  }
  return nested === undefined && flat !== undefined ? [flat, flatPath] : [nested, nestedPath];
}

/**
 * Resolves the session keys of an interactive auth node at compile time:
 * aliases merged, the store looked up, the cookie checked. Undefined when no
 * secret is set (the node is then stateless).
 */
export function resolveSessionSettings(
  config: SessionConfig,
  env: PluginEnv,
  defaultCookieName: string,
): SessionSettings | undefined {
  const s = config.session ?? {};
  const [secret, secretPath] = pick(s.secret, config.session_secret, 'session.secret', 'session_secret');
  const [rawStorage, storagePath] = pick(
    s.storage,
    config.session_storage,
    'session.storage',
    'session_storage',
  );
  const [storeName, storePath] = pick(s.store, config.session_store, 'session.store', 'session_store');
  const [name, namePath] = pick(
    s.cookie?.name,
    config.session_cookie_name,
    'session.cookie.name',
    'session_cookie_name',
  );
  const [path, pathPath] = pick(
    s.cookie?.path,
    config.session_cookie_path,
    'session.cookie.path',
    'session_cookie_path',
  );
  const [life] = pick(
    s.cookie?.lifetime,
    config.session_cookie_lifetime,
    'session.cookie.lifetime',
    'session_cookie_lifetime',
  );

  if (secret === undefined) {
    if (rawStorage !== undefined || storeName !== undefined) {
      env.warn(storagePath, 'session settings have no effect without a session secret (stateless mode)');
    }
    return undefined;
  }
  const secrets = typeof secret === 'string' ? [secret] : secret;
  // An unset ${SECRET} must not quietly turn interactive login off.
  secrets.forEach((entry, i) => {
    if (entry === '') {
      throw new ConfigError(
        typeof secret === 'string' ? secretPath : `${secretPath}[${i}]`,
        'must not be empty',
      );
    }
  });

  const mode: SessionStorage = rawStorage === 'kvstore' || rawStorage === 'redis' ? 'kvstore' : 'cookie';
  let store: Store | undefined;
  if (mode === 'kvstore') {
    if (storeName === undefined)
      throw new ConfigError(storePath, `is required when ${storagePath} is ${rawStorage}`);
    store = env.stores.get(storeName);
    if (store === undefined) throw new ConfigError(storePath, `unknown store '${storeName}'`);
  } else if (storeName !== undefined) {
    env.warn(storePath, 'ignored: cookie storage keeps sessions in the cookie');
  }

  const cookieName = name ?? defaultCookieName;
  if (!COOKIE_NAME.test(cookieName))
    throw new ConfigError(namePath, `'${cookieName}' is not a valid cookie name`);
  const cookiePath = path ?? '/';
  if (!cookiePath.startsWith('/') || /[;\s]/.test(cookiePath)) {
    throw new ConfigError(pathPath, 'must start with / and contain no spaces or semicolons');
  }
  return {
    secret: secrets,
    storage: mode,
    store,
    cookie: { name: cookieName, path: cookiePath, lifetime: life ?? DEFAULT_SESSION_LIFETIME },
  };
}
