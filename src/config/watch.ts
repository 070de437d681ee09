import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

export interface ConfigWatcher {
  close(): void;
}

/**
 * Calls `onChange` once per burst of changes to `path`, `debounceMs` after the
 * last one. The directory is watched because editors often replace the file
 * by renaming a new one over it.
 */
export function watchConfigFile(path: string, debounceMs: number, onChange: () => void): ConfigWatcher {
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, file) => {
      if (file !== null && file !== name) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, debounceMs);
    });
    watcher.on('error', () => undefined);
  } catch {
    watcher = undefined;
  }
  return {
    close() {
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
