import { ConfigRejected, formatIssues } from '../config/schema-validate.js';
import { loadSystemConfig, type SystemConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import type { StreamListenerConfig } from '../config/system.js';
import type { StreamChanges } from './index.js';

/**
 * SIGHUP for system.yaml: re-reads the file and applies its `stream:` section
 * to the running listeners (docs/stream.md#reload). An invalid file changes
 * nothing and is logged with the paths of its errors; changes to any other
 * section are named in a warning, as they take effect only at restart.
 * Answers the configuration now in force.
 */
export async function reloadStreams(
  systemPath: string,
  running: SystemConfig,
  /** Runs the new listeners here (answering what changed), or hands them to the workers (undefined). */
  apply: (stream: StreamListenerConfig[]) => Promise<StreamChanges | undefined>,
  logger: Logger,
): Promise<SystemConfig> {
  let next: SystemConfig;
  try {
    next = loadSystemConfig(systemPath);
  } catch (err) {
    const detail = err instanceof ConfigRejected ? formatIssues(err.issues) : (err as Error).message;
    logger.error(
      { file: systemPath, errors: detail },
      'system.yaml not reloaded: stream listeners unchanged',
    );
    return running;
  }
  const changes = await apply(next.stream);
  if (changes === undefined) {
    if (JSON.stringify(next.stream) !== JSON.stringify(running.stream))
      logger.info({ listeners: next.stream.length }, 'stream listeners sent to every worker');
  } else logChanges(changes, logger);
  const restartNeeded = Object.keys({ ...running, ...next }).filter(
    (key) =>
      key !== 'stream' &&
      JSON.stringify(running[key as keyof SystemConfig]) !== JSON.stringify(next[key as keyof SystemConfig]),
  );
  if (restartNeeded.length > 0)
    logger.warn(
      { sections: restartNeeded },
      'system.yaml changed outside stream: those sections apply at restart',
    );
  // Only `stream:` took effect; the rest stays what the process started with.
  return { ...running, stream: next.stream };
}

function logChanges(changes: StreamChanges, logger: Logger): void {
  const { started, updated, restarted, removed, failed } = changes;
  if (started.length + updated.length + restarted.length + removed.length + failed.length === 0) return;
  const log = failed.length > 0 ? logger.error.bind(logger) : logger.info.bind(logger);
  log({ started, updated, restarted, removed, failed }, 'stream listeners reloaded');
}
