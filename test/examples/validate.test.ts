/**
 * Every shipped example validates: the gateway.yaml of each folder compiles and
 * every system.yaml (including examples/system-*.yaml) loads, as
 * `switchyard validate` would check them. Runs in-process: no network, no
 * processes; the placeholders take their defaults.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadGatewayConfig } from '../../src/config/gateway.js';
import { loadSystemConfig } from '../../src/config/system.js';
import { loadSecrets } from '../../src/config/secrets/load.js';
import { compileWith } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const examples = join(repo, 'examples');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return yamlFiles(path);
      return name.endsWith('.yaml') ? [path] : [];
    });
}

const files = yamlFiles(examples);
const env: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(UPSTREAM|GATEWAY|ADMIN|BACKEND|REDIS|LOG)_/.test(k)),
);

test('examples: the example folders and their gateway files are all found', () => {
  const gateways = files.filter((f) => f.endsWith('gateway.yaml'));
  assert.ok(gateways.length >= 70, `only ${gateways.length} gateway.yaml files`);
});

for (const file of files) {
  const name = relative(repo, file);
  if (file.endsWith('gateway.yaml')) {
    test(`examples: ${name} compiles`, async () => {
      // `${secret:…}` references resolve through the folder's system.yaml `secrets:`, as
      // `switchyard validate --system-config` resolves them (examples/secrets, from the repo root).
      const sibling = join(dirname(file), 'system.yaml');
      const system = existsSync(sibling) ? loadSystemConfig(sibling) : undefined;
      const own = { ...env };
      const secrets =
        system?.secrets === undefined ? undefined : await loadSecrets(system, silentLogger, file, own);
      const runtime = compileWith(loadGatewayConfig(file), silentLogger, own, file);
      await runtime.close();
      secrets?.store?.close();
    });
  } else if (/system[^/]*\.yaml$/.test(file)) {
    test(`examples: ${name} loads`, () => {
      loadSystemConfig(file);
    });
  }
}
