import { createHash, createHmac } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { entryBuilder, formatReadsBody, stamp, type EntryConfig, type Stamped } from './shared/entry.js';
import {
  batchProperties,
  batchSettings,
  entryProperties,
  logNode,
  loggerSchema,
  successOnly,
  type BatchConfig,
} from './shared/logger-node.js';
import { contents, encodeMessage, message } from './shared/protobuf.js';
import { HttpEndpoint } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface ClsConfig extends EntryConfig, BatchConfig {
  cls_host?: string;
  endpoint?: string;
  cls_topic?: string;
  topic_id?: string;
  secret_id: string;
  secret_key: string;
  scheme: 'http' | 'https';
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
  global_tag?: Record<string, string | number | boolean>;
}

/** How long a request signature stays valid. */
const SIGNATURE_LIFETIME_S = 300;
const SOURCE = hostname();

/**
 * Uploads entries to Tencent Cloud Log Service: a protobuf LogGroupList
 * POSTed to `/structuredlog?topic_id=…`, signed with the `q-sign-algorithm=sha1`
 * scheme. `global_tag` becomes the log group's tags.
 */
export const tencentCloudCls = definePlugin({
  type: 'tencent-cloud-cls',
  category: 'observability',
  description: 'Upload access-log entries to Tencent Cloud CLS (structuredlog, signed), in batches.',
  schema: loggerSchema(
    {
      cls_host: {
        type: 'string',
        minLength: 1,
        description: 'Upload host, e.g. ap-guangzhou.cls.tencentcs.com.',
      },
      endpoint: { type: 'string', minLength: 1, description: 'Alias of `cls_host`.' },
      cls_topic: { type: 'string', minLength: 1, description: 'Topic id.' },
      topic_id: { type: 'string', minLength: 1, description: 'Alias of `cls_topic`.' },
      secret_id: { type: 'string', minLength: 1 },
      secret_key: { type: 'string', minLength: 1 },
      scheme: { type: 'string', enum: ['http', 'https'], default: 'https' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 10000, description: 'Milliseconds per shipment.' },
      global_tag: {
        type: 'object',
        additionalProperties: { type: ['string', 'number', 'boolean'] },
        description: 'Tags of every log group.',
      },
      ...entryProperties,
      ...batchProperties(),
    },
    ['secret_id', 'secret_key'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: ClsConfig) => formatReadsBody(config),
  create(config: ClsConfig, env) {
    const host = config.cls_host ?? config.endpoint;
    if (host === undefined) throw new ConfigError('cls_host', 'is required (or its alias endpoint)');
    const topic = config.cls_topic ?? config.topic_id;
    if (topic === undefined) throw new ConfigError('cls_topic', 'is required (or its alias topic_id)');
    const query = `topic_id=${encodeURIComponent(topic)}`;
    const endpoint = new HttpEndpoint(
      `${config.scheme}://${host}/structuredlog?${query}`,
      config.cls_host === undefined ? 'endpoint' : 'cls_host',
      { sslVerify: config.ssl_verify, tls: config.tls, timeoutMs: config.timeout },
    );
    const tags = Object.entries(config.global_tag ?? {}).map(
      ([k, v]) =>
        [
          5,
          message([
            [1, k],
            [2, String(v)],
          ]),
        ] as const,
    );
    return logNode<Stamped>(env, batchSettings(config), {
      encode: stamp(entryBuilder(config, env)),
      ship: async (batch) => {
        const group = message([
          ...batch.map(
            ({ at, entry }) =>
              [
                1,
                message([
                  [1, at],
                  ...contents(entry).map(
                    ([k, v]) =>
                      [
                        2,
                        message([
                          [1, k],
                          [2, v],
                        ]),
                      ] as const,
                  ),
                ]),
              ] as const,
          ),
          [4, SOURCE],
          ...tags,
        ]);
        const body = encodeMessage(message([[1, group]]));
        await endpoint.send({
          headers: [
            'content-type', 'application/x-protobuf',
            'authorization', authorization(config.secret_id, config.secret_key, '/structuredlog', query),
          ], // prettier-ignore
          body,
        });
      },
      release: () => endpoint.release(),
    });
  },
});

/** The CLS request signature over method, path and query (no headers signed). */
export function authorization(
  secretId: string,
  secretKey: string,
  path: string,
  query: string,
  now = Math.floor(Date.now() / 1000),
): string {
  const keyTime = `${now};${now + SIGNATURE_LIFETIME_S}`;
  const signKey = createHmac('sha1', secretKey).update(keyTime).digest('hex');
  const params = query.split('&').sort();
  const info = `post\n${path}\n${params.join('&')}\n\n`;
  const toSign = `sha1\n${keyTime}\n${createHash('sha1').update(info).digest('hex')}\n`;
  const signature = createHmac('sha1', signKey).update(toSign).digest('hex');
  const names = params.map((p) => p.slice(0, p.indexOf('='))).join(';');
  return (
    `q-sign-algorithm=sha1&q-ak=${secretId}&q-sign-time=${keyTime}&q-key-time=${keyTime}` +
    `&q-header-list=&q-url-param-list=${names}&q-signature=${signature}`
  );
}
