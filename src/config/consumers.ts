import { interpolateLeaves } from './interpolate.js';
import type { ConfigIssue } from './schema-validate.js';
import type { ConsumerIndex, ConsumerRecord } from '../core/consumers.js';
import { JWT_ALGORITHMS } from '../signing/jwt-key.js';

export type { ConsumerIndex, ConsumerRecord } from '../core/consumers.js';

/**
 * The `consumers:` resource (docs/consumers.md): named API clients with
 * per-auth-plugin credentials. Same item shape as the reference gateway:
 *
 * ```yaml
 * consumers:
 *   - name: alice
 *     group: gold
 *     labels: { custom_id: "42", tier: gold }
 *     credentials:
 *       key-auth: { key: ${ALICE_KEY} }
 *       basic-auth: { username: alice, password: s3cret }
 * ```
 */

const text = { type: 'string', minLength: 1 } as const;

function credential(required: readonly string[], properties: Record<string, object>): object {
  return { type: 'object', additionalProperties: false, required, properties };
}

/** The credential each auth plugin reads; the first required field identifies the consumer. */
export const credentialsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    'key-auth': credential(['key'], { key: text }),
    'basic-auth': credential(['username', 'password'], { username: text, password: { type: 'string' } }),
    'jwt-auth': credential(['key'], {
      key: text,
      secret: text,
      public_key: text,
      algorithm: { type: 'string', enum: [...JWT_ALGORITHMS] },
    }),
    'hmac-auth': credential(['access_key', 'secret_key'], { access_key: text, secret_key: text }),
    'jwe-decrypt': credential(['key', 'secret'], {
      key: text,
      secret: text,
      is_base64_encoded: { type: 'boolean' },
    }),
  },
} as const;

/** Label names become header names (attach-consumer-label), so they must be header tokens. */
export const labelsSchema = {
  type: 'object',
  propertyNames: { pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" },
  additionalProperties: { type: 'string' },
} as const;

/**
 * The field that names a consumer for each credential type: two consumers may
 * not share its value, since a presented credential must pick one identity.
 */
export const CREDENTIAL_ID_FIELDS: Readonly<Record<string, string>> = {
  'key-auth': 'key',
  'basic-auth': 'username',
  'jwt-auth': 'key',
  'hmac-auth': 'access_key',
  'jwe-decrypt': 'key',
};

/** One `consumers:` item (docs/consumers.md); `credentialsSchema` above gives the credential shapes. */
export interface ConsumerConfig {
  name: string;
  group?: string;
  description?: string;
  labels?: Record<string, string>;
  /** Keyed by auth plugin type, e.g. `key-auth: {key}`, `basic-auth: {username, password}`. */
  credentials?: Record<string, Record<string, unknown>>;
}

const NO_CONSUMERS: ReadonlyMap<string, ConsumerRecord> = new Map();

class Index implements ConsumerIndex {
  readonly #byName: ReadonlyMap<string, ConsumerRecord>;
  readonly #byCredential: ReadonlyMap<string, ReadonlyMap<string, ConsumerRecord>>;

  constructor(
    byName: ReadonlyMap<string, ConsumerRecord>,
    byCredential: ReadonlyMap<string, ReadonlyMap<string, ConsumerRecord>>,
  ) {
    this.#byName = byName;
    this.#byCredential = byCredential;
  }

  get size(): number {
    return this.#byName.size;
  }

  byName(name: string): ConsumerRecord | undefined {
    return this.#byName.get(name);
  }

  byCredential(plugin: string, field: string, value: string): ConsumerRecord | undefined {
    return this.#byCredential.get(slot(plugin, field))?.get(value);
  }

  credentialMap(plugin: string, field: string): ReadonlyMap<string, ConsumerRecord> {
    return this.#byCredential.get(slot(plugin, field)) ?? NO_CONSUMERS;
  }
}

function slot(plugin: string, field: string): string {
  return `${plugin}\u0000${field}`;
}

/** An index with no consumers (tests, and configurations without a `consumers:` section). */
export const EMPTY_CONSUMER_INDEX: ConsumerIndex = new Index(new Map(), new Map());

/**
 * Resolves `${ENV}` in every consumer and indexes each string credential field.
 * A value shared by two consumers is left out of the index; for a credential's
 * identifying field that is also reported as an issue. Duplicate names are
 * reported by the caller; the first declaration wins here.
 */
export function buildConsumerIndex(
  consumers: readonly ConsumerConfig[],
  env: NodeJS.ProcessEnv,
  issues: ConfigIssue[],
): ConsumerIndex {
  if (consumers.length === 0) return EMPTY_CONSUMER_INDEX;
  const byName = new Map<string, ConsumerRecord>();
  const owners = new Map<string, Map<string, { record: ConsumerRecord; shared: boolean }>>();
  consumers.forEach((raw, index) => {
    const record = resolve(raw, env);
    if (byName.has(record.name)) return;
    byName.set(record.name, record);
    for (const [plugin, fields] of Object.entries(record.credentials)) {
      const idField = CREDENTIAL_ID_FIELDS[plugin];
      for (const [field, value] of Object.entries(fields)) {
        if (typeof value !== 'string') continue;
        const path = `consumers[${index}].credentials.${plugin}.${field}`;
        if (value === '') {
          if (field === idField)
            issues.push({ path, message: `consumer '${record.name}': ${field} is empty` });
          continue;
        }
        let values = owners.get(slot(plugin, field));
        if (values === undefined) {
          values = new Map();
          owners.set(slot(plugin, field), values);
        }
        const first = values.get(value);
        if (first === undefined) values.set(value, { record, shared: false });
        else {
          first.shared = true;
          if (field === idField) {
            issues.push({
              path,
              message: `consumers '${first.record.name}' and '${record.name}' share the same ${plugin} ${field}`,
            });
          }
        }
      }
    }
  });
  const byCredential = new Map<string, ReadonlyMap<string, ConsumerRecord>>();
  for (const [key, values] of owners) {
    const unique = new Map<string, ConsumerRecord>();
    for (const [value, { record, shared }] of values) if (!shared) unique.set(value, record);
    byCredential.set(key, unique);
  }
  return new Index(byName, byCredential);
}

function resolve(raw: ConsumerConfig, env: NodeJS.ProcessEnv): ConsumerRecord {
  const consumer = interpolateLeaves(raw, env);
  const credentials: Record<string, Readonly<Record<string, unknown>>> = {};
  for (const [plugin, fields] of Object.entries(consumer.credentials ?? {})) {
    credentials[plugin] = Object.freeze({ ...fields });
  }
  return Object.freeze({
    name: consumer.name,
    ...(consumer.group === undefined ? {} : { group: consumer.group }),
    labels: Object.freeze({ ...consumer.labels }),
    credentials: Object.freeze(credentials),
  });
}
