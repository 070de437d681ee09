import { ConfigError, definePlugin } from '../../core/plugin.js';
import { entryBuilder, formatReadsBody, type EntryConfig, type LogEntry } from './shared/entry.js';
import {
  batchProperties,
  batchSettings,
  entryProperties,
  logNode,
  loggerSchema,
  successOnly,
  type BatchConfig,
} from './shared/logger-node.js';
import { endpointRing } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface ClickhouseLoggerConfig extends EntryConfig, BatchConfig {
  endpoint_addr?: string;
  endpoint_addrs?: string[];
  database: string;
  logtable: string;
  user: string;
  password: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

/** A table name, optionally `db.table`, that can go into the INSERT statement unquoted. */
const TABLE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/** Inserts entries through the ClickHouse HTTP interface: `INSERT INTO t FORMAT JSONEachRow` plus rows. */
export const clickhouseLogger = definePlugin({
  type: 'clickhouse-logger',
  category: 'observability',
  description: 'Insert access-log entries into a ClickHouse table (HTTP interface, JSONEachRow), in batches.',
  schema: loggerSchema(
    {
      endpoint_addr: { type: 'string', minLength: 1, description: 'ClickHouse HTTP URL. Never templated.' },
      endpoint_addrs: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
      database: { type: 'string', minLength: 1 },
      logtable: { type: 'string', minLength: 1 },
      user: { type: 'string', default: '' },
      password: { type: 'string', default: '' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per shipment.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['database', 'logtable'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: ClickhouseLoggerConfig) => formatReadsBody(config),
  create(config: ClickhouseLoggerConfig, env) {
    if (!TABLE.test(config.logtable)) {
      throw new ConfigError(
        'logtable',
        'must be a plain table name (letters, digits, _; optionally db.table)',
      );
    }
    const ring = endpointRing(
      {
        single: config.endpoint_addr,
        list: config.endpoint_addrs,
        singleKey: 'endpoint_addr',
        listKey: 'endpoint_addrs',
      },
      '',
      { sslVerify: config.ssl_verify, tls: config.tls, timeoutMs: config.timeout * 1000 },
    );
    const headers = [
      'content-type', 'text/plain; charset=utf-8',
      'x-clickhouse-user', config.user,
      'x-clickhouse-key', config.password,
      'x-clickhouse-database', config.database,
    ]; // prettier-ignore
    const statement = `INSERT INTO ${config.logtable} FORMAT JSONEachRow\n`;
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: entryBuilder(config, env),
      ship: async (batch) => {
        await ring.next().send({ headers, body: statement + batch.map((e) => JSON.stringify(e)).join('\n') });
      },
      release: () => ring.release(),
    });
  },
});
