import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Reply } from './http.js';

/** Where `vite build` puts the editor (ui/dist beside src/). */
export const DEFAULT_UI_DIR = fileURLToPath(new URL('../../ui/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

const PLACEHOLDER = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Switchyard admin</title></head>
<body>
<h1>Switchyard admin</h1>
<p>The web editor is not built in this installation. The Admin API answers under
<code>/api/</code> (HTTP Basic); see docs/admin-api.md.</p>
<p>Probes: <a href="/healthz">/healthz</a>, <a href="/readyz">/readyz</a>.</p>
</body>
</html>
`;

/**
 * Serves the built editor as a single-page app: a file under the UI
 * directory when one matches, `index.html` for every other path (client-side
 * routes). Without a build, a placeholder page stands in.
 */
export function createUiHandler(dir: string = DEFAULT_UI_DIR): (pathname: string) => Promise<Reply> {
  const root = resolve(dir);
  const index = join(root, 'index.html');
  const built = existsSync(index);
  return async (pathname) => {
    if (!built) return { status: 200, body: PLACEHOLDER, contentType: TYPES['.html'] as string };
    const file = resolveAsset(root, pathname) ?? index;
    const body = await readFile(file);
    const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
    // Hashed build assets never change under their name; index.html must always be re-fetched.
    const cache = file === index ? 'no-cache' : 'public, max-age=31536000, immutable';
    return { status: 200, body, contentType: type, headers: { 'cache-control': cache } };
  };
}

/** The file under `root` that `pathname` names, never escaping `root`; undefined when none. */
function resolveAsset(root: string, pathname: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  const candidate = join(root, normalize(decoded));
  if (candidate !== root && !candidate.startsWith(root + sep)) return undefined;
  try {
    return statSync(candidate).isFile() ? candidate : undefined;
  } catch {
    return undefined;
  }
}
