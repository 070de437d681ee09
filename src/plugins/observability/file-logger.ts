import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { definePlugin } from '../../core/plugin.js';
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
import { fileAppend, ndjson } from './shared/transport.js';

interface FileLoggerConfig extends EntryConfig, BatchConfig {
  path: string;
}

/** Appends newline-delimited JSON entries to a local file. */
export const fileLogger = definePlugin({
  type: 'file-logger',
  category: 'observability',
  description: 'Append access-log entries as newline-delimited JSON to a local file.',
  schema: loggerSchema(
    {
      path: {
        type: 'string',
        minLength: 1,
        description:
          'File to append to; relative to gateway.yaml. Its directory must exist. Never templated.',
      },
      ...entryProperties,
      ...batchProperties(),
    },
    ['path'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: FileLoggerConfig) => formatReadsBody(config),
  create(config: FileLoggerConfig, env) {
    const path = resolve(env.configDir ?? process.cwd(), config.path);
    // Not fatal: the directory may be mounted after the configuration is checked.
    if (!existsSync(dirname(path))) env.warn('path', `directory ${dirname(path)} does not exist (yet)`);
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: entryBuilder(config, env),
      ship: (batch) => fileAppend(path, ndjson(batch)),
    });
  },
});
