import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, extname, isAbsolute, join, relative, sep } from 'node:path';

/**
 * The scripts folder: `plugins/` beside the folder that holds gateway.yaml
 * (`config/gateway.yaml` → `plugins/`). Undefined without a config path.
 */
export function pluginsDir(configDir: string | undefined): string | undefined {
  return configDir === undefined ? undefined : join(dirname(configDir), 'plugins');
}

/** A script file as given: absolute as is, relative against the plugins folder. */
export function resolveScriptPath(source: string, configDir: string | undefined): string | undefined {
  if (isAbsolute(source)) return source;
  const dir = pluginsDir(configDir);
  return dir === undefined ? undefined : join(dir, source);
}

/**
 * Why a script file or module folder may not be used, or undefined when it
 * may: with a config folder, `path` must lie inside the plugins/ folder or
 * the config folder, symlinks resolved, so a config (or a sandbox node)
 * cannot make the gateway read and echo an arbitrary file. The answer never
 * depends on whether `path` exists. Without a config folder there is nothing
 * to hold it to.
 */
export function outsideScriptFolders(path: string, configDir: string | undefined): string | undefined {
  const plugins = pluginsDir(configDir);
  if (configDir === undefined || plugins === undefined) return undefined;
  const roots = [plugins, configDir];
  const real = realOrSelf(path);
  const inside = (p: string): boolean =>
    roots.some((root) => {
      for (const r of new Set([root, realOrSelf(root)])) {
        const rel = relative(r, p);
        if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) return true;
      }
      return false;
    });
  if (inside(path) && inside(real)) return undefined;
  return `'${path}' is outside the plugins/ folder (${plugins}) and the config folder (${configDir}); scripts and modules must live there`;
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Reads a script file; throws an Error whose message names the path and the reason. */
export function readScript(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`cannot read ${path}${code === undefined ? '' : ` (${code})`}`, { cause: err });
  }
}

export interface ScriptListing {
  scripts: { name: string; file: string; runtime: 'lua' }[];
}

/**
 * The body of `GET /api/scripts`: every `.lua` file under the plugins
 * folder. `file` is relative to that folder, so it works as a script node's
 * `source` as is; `name` is the file name without `.lua`. An absent folder
 * lists nothing.
 */
export function listScripts(configDir: string | undefined): ScriptListing {
  const root = pluginsDir(configDir);
  if (root === undefined) return { scripts: [] };
  let entries: string[];
  try {
    entries = readdirSync(root, { recursive: true, encoding: 'utf8' });
  } catch {
    return { scripts: [] };
  }
  const scripts = entries
    .filter((entry) => extname(entry) === '.lua')
    .map((entry) => relative(root, join(root, entry)).split(sep).join('/'))
    .sort()
    .map((file) => ({ name: basename(file, '.lua'), file, runtime: 'lua' as const }));
  return { scripts };
}
