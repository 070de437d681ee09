import { createHash, createHmac } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { definePlugin } from '../../core/plugin.js';
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

interface SlsLoggerConfig extends EntryConfig, BatchConfig {
  host: string;
  port: number;
  project: string;
  logstore: string;
  access_key_id: string;
  access_key_secret: string;
  timeout: number;
  tls?: CalloutTlsConfig;
}

const SOURCE = hostname();

/**
 * Writes entries with the Alibaba Cloud Log Service PutLogs API: a protobuf
 * LogGroup POSTed to `/logstores/<logstore>/shards/lb` on `<project>.<host>`,
 * signed with the `LOG <id>:<hmac-sha1>` scheme.
 */
export const slsLogger = definePlugin({
  type: 'sls-logger',
  category: 'observability',
  description: 'Write access-log entries to Alibaba Cloud Log Service (PutLogs, signed), in batches.',
  schema: loggerSchema(
    {
      host: {
        type: 'string',
        minLength: 1,
        description: 'Region endpoint, e.g. cn-hangzhou.log.aliyuncs.com; https unless `http://` is given.',
      },
      port: { type: 'integer', minimum: 1, maximum: 65535 },
      project: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]*$' },
      logstore: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
      access_key_id: { type: 'string', minLength: 1 },
      access_key_secret: { type: 'string', minLength: 1 },
      timeout: { type: 'integer', minimum: 1, default: 5000, description: 'Milliseconds per shipment.' },
      tls: calloutTlsSchema,
      ...entryProperties,
      ...batchProperties(),
    },
    ['host', 'port', 'project', 'logstore', 'access_key_id', 'access_key_secret'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: SlsLoggerConfig) => formatReadsBody(config),
  create(config: SlsLoggerConfig, env) {
    const scheme = /^http:\/\//i.test(config.host) ? 'http' : 'https';
    const host = config.host.replace(/^https?:\/\//i, '').replace(/\/+$/, '');
    const virtualHost = `${config.project}.${host}`;
    // An address (a private endpoint, a test double) is dialled directly; the project still goes in Host.
    const dial = isIP(host) !== 0 || host === 'localhost' ? host : virtualHost;
    const resource = `/logstores/${config.logstore}/shards/lb`;
    const endpoint = new HttpEndpoint(`${scheme}://${dial}:${config.port}${resource}`, 'host', {
      sslVerify: true,
      tls: config.tls,
      timeoutMs: config.timeout,
    });
    return logNode<Stamped>(env, batchSettings(config), {
      encode: stamp(entryBuilder(config, env)),
      ship: async (batch) => {
        const body = encodeMessage(
          message([
            ...batch.map(
              ({ at, entry }) =>
                [
                  1,
                  message([
                    [1, Math.floor(at / 1000)],
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
            [3, ''],
            [4, SOURCE],
          ]),
        );
        const headers = signedHeaders(config, body, resource);
        await endpoint.send({ headers: ['host', `${virtualHost}:${config.port}`, ...headers], body });
      },
      release: () => endpoint.release(),
    });
  },
});

/** The PutLogs request headers with the `LOG <id>:<signature>` authorization. */
export function signedHeaders(
  keys: { access_key_id: string; access_key_secret: string },
  body: Buffer,
  resource: string,
  date = new Date().toUTCString(),
): string[] {
  const md5 = createHash('md5').update(body).digest('hex').toUpperCase();
  const type = 'application/x-protobuf';
  const logHeaders: [string, string][] = [
    ['x-log-apiversion', '0.6.0'],
    ['x-log-bodyrawsize', String(body.length)],
    ['x-log-signaturemethod', 'hmac-sha1'],
  ];
  const canonical = logHeaders.map(([k, v]) => `${k}:${v}`).join('\n');
  const toSign = `POST\n${md5}\n${type}\n${date}\n${canonical}\n${resource}`;
  const signature = createHmac('sha1', keys.access_key_secret).update(toSign).digest('base64');
  return [
    'content-type', type,
    'content-md5', md5,
    'date', date,
    ...logHeaders.flat(),
    'authorization', `LOG ${keys.access_key_id}:${signature}`,
  ]; // prettier-ignore
}
