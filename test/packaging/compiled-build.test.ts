import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test, type TestContext } from 'node:test';
import { pathToFileURL } from 'node:url';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { ensureBuilt, repoRoot } from './build.js';

/**
 * What the compiled build loads for the shipped config: only the plugin modules of the node types
 * it uses, none of the heavy optional dependencies, and no Ajv compiler (every schema it checks
 * was precompiled by the build). Runs dist/ directly in a child process, so the check sees
 * exactly what a gateway started from the build loads.
 */
interface Loaded {
  lazy: boolean;
  loadedTypes: string[];
  usedTypes: string[];
  modules: string[];
}

function loadShippedConfig(): Loaded {
  const dist = (path: string) => JSON.stringify(join(repoRoot, 'dist', path));
  const script = `
    import { createRequire } from 'node:module';
    await import(${dist('cli.js')}); // everything the CLI imports before it runs a command
    const { loadSystemConfig } = await import(${dist('config/system.js')});
    const { loadGatewayConfig } = await import(${dist('config/gateway.js')});
    const { compileWith } = await import(${dist('gateway.js')});
    const { silentLogger } = await import(${dist('core/logger.js')});
    const plugins = await import(${dist('plugins/index.js')});
    loadSystemConfig('config/system.yaml');
    const config = loadGatewayConfig('config/gateway.yaml');
    const runtime = compileWith(config, silentLogger, process.env, 'config/gateway.yaml');
    await runtime.close();
    const require = createRequire(import.meta.url);
    console.log(JSON.stringify({
      lazy: plugins.pluginsLoadLazily,
      loadedTypes: [...plugins.loadedPluginTypes()].sort(),
      usedTypes: [...new Set(config.policies.flatMap((p) => p.nodes.map((n) => n.type)))].sort(),
      modules: Object.keys(require.cache),
    }));
  `;
  // Records every module the ES loader loads (a CommonJS package imported from ESM included);
  // require.cache adds those loaded by require().
  // Node 22+ runs module hooks on their own thread, whose process.stderr is flushed
  // asynchronously: a loaded machine could end the process before the lines arrived. writeSync
  // puts each line on fd 2 before the module loads.
  const hook = `import { writeSync } from 'node:fs';
  export async function load(url, context, next) {
    writeSync(2, 'LOADED ' + url + '\\n');
    return next(url, context);
  }`;
  const register = `import { register } from 'node:module';
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));`;
  const run = spawnSync(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', script],
    {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ADMIN_PASSWORD: 'test' },
    },
  );
  assert.equal(run.status, 0, run.stderr);
  const loaded = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as Loaded;
  const viaImport = run.stderr
    .split('\n')
    .filter((l) => l.startsWith('LOADED file://'))
    .map((l) => decodeURIComponent(l.slice('LOADED file://'.length)));
  assert.ok(
    viaImport.some((m) => m.endsWith('/dist/gateway.js')),
    'the loader hook saw the gateway load',
  );
  return { ...loaded, modules: [...loaded.modules, ...viaImport] };
}

let loaded: Loaded;
before(() => {
  ensureBuilt();
  loaded = loadShippedConfig();
});

test('compiled build: imports the module of a node type only when the config uses that type', () => {
  assert.equal(loaded.lazy, true, 'the build registry reads dist/plugins/manifest.json');
  assert.deepEqual(loaded.loadedTypes, loaded.usedTypes);
});

test('compiled build: the shipped config loads none of the heavy optional dependencies', () => {
  // `yaml` too: js-yaml parses the files; `yaml` is loaded for an error's position or an admin write.
  const heavy = ['casbin', 'fengari', 'ldapts', 'ioredis', 'acme-client', '@peculiar/x509', 'jose', 'yaml'];
  for (const name of [...heavy, '@modelcontextprotocol/sdk']) {
    const hits = loaded.modules.filter((m) => m.includes(`/node_modules/${name}/`));
    assert.deepEqual(hits, [], `${name} is not loaded`);
  }
});

test('compiled build: no JSON Schema is compiled at startup (the build precompiled them)', () => {
  const compiler = loaded.modules.filter((m) => m.includes('/node_modules/ajv/dist/compile/'));
  assert.deepEqual(compiler, []);
  assert.ok(
    loaded.modules.some((m) => m.includes('/dist/validators/')),
    'the precompiled validators were used',
  );
});

test('compiled build: `switchyard validate` of the shipped config loads neither prom-client, yaml nor undici', () => {
  // bin/switchyard.js runs the build, as `npx switchyard validate` does. A loader hook names every
  // package the ES loader loads; the packages required from CommonJS or from plugin modules
  // (loaded with require()) are listed from require.cache when the process exits.
  const hook = `export async function load(url, context, next) {
    if (url.includes('/node_modules/')) process.stderr.write('LOADED ' + url + '\\n');
    return next(url, context);
  }`;
  const register = `import { register, createRequire } from 'node:module';
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
    const require = createRequire(${JSON.stringify(join(repoRoot, 'package.json'))});
    process.on('exit', () => { for (const m of Object.keys(require.cache)) process.stderr.write('LOADED ' + m + '\\n'); });`;
  const run = spawnSync(
    process.execPath,
    [
      '--import',
      `data:text/javascript,${encodeURIComponent(register)}`,
      join(repoRoot, 'bin', 'switchyard.js'),
      'validate',
      '--system-config',
      'config/system.yaml',
      '--gateway-config',
      'config/gateway.yaml',
    ],
    {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ADMIN_PASSWORD: 'test', SWITCHYARD_FROM_SOURCE: '0' },
    },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /configuration is valid/);
  const loaded = run.stderr.split('\n').filter((l) => l.startsWith('LOADED '));
  // Reading the config loads js-yaml: proof the hook sees what the run loads.
  assert.ok(
    loaded.some((l) => l.includes('/node_modules/js-yaml/')),
    'the hook saw the config parser load',
  );
  // The shipped config has an upstream node; its pool is made on the first request, not at compile.
  for (const name of ['prom-client', 'yaml', '@opentelemetry/api', 'undici']) {
    assert.deepEqual(
      loaded.filter((l) => l.includes(`/node_modules/${name}/`) || l.includes(`/dist/vendor/${name}.cjs`)),
      [],
      `${name} is not loaded by validate`,
    );
  }
});

/**
 * Starts the compiled gateway on the shipped gateway.yaml and `system` (a system.yaml path), sends a
 * proxied request, scrapes /metrics and stops it; returns every package module it loaded.
 */
async function modulesOfServing(t: TestContext, system: string, dir: string): Promise<string[]> {
  // Names every module the ES loader loads, and on exit every one require() loaded.
  const hook = join(dir, 'hook.mjs');
  writeFileSync(
    hook,
    `export async function load(url, context, next) {
      if (url.includes('/node_modules/') || url.includes('/dist/vendor/')) process.stderr.write('LOADED ' + url + '\\n');
      return next(url, context);
    }`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(
    register,
    `import { register, createRequire } from 'node:module';
    register(${JSON.stringify(pathToFileURL(hook).href)});
    const require = createRequire(${JSON.stringify(join(repoRoot, 'package.json'))});
    process.on('exit', () => { for (const m of Object.keys(require.cache)) process.stderr.write('LOADED ' + m + '\\n'); });`,
  );
  const [port, adminPort] = [await freePort(), await freePort()];
  const gateway = spawnGateway(
    ['--system-config', system, '--gateway-config', join(repoRoot, 'config', 'gateway.yaml')],
    {
      NODE_OPTIONS: `--import=${register}`,
      SWITCHYARD_FROM_SOURCE: '0',
      GATEWAY_BIND: '127.0.0.1',
      GATEWAY_PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_PASSWORD: 'bundles-test',
    },
  );
  t.after(() => gateway.stop('SIGKILL'));
  await waitForHttp(`http://127.0.0.1:${port}/hello`);
  await waitForHttp(`http://127.0.0.1:${adminPort}/metrics`);
  // A proxied request, log lines (pino) and a scrape (prom-client).
  const proxied = await fetch(`http://127.0.0.1:${port}/api/hello`);
  assert.equal(proxied.status, 200, await proxied.text());
  const scrape = await fetch(`http://127.0.0.1:${adminPort}/metrics`, {
    headers: { authorization: `Basic ${Buffer.from('admin:bundles-test').toString('base64')}` },
  });
  assert.equal(scrape.status, 200);
  assert.match(await scrape.text(), /^gateway_requests_total\{/m);
  assert.equal(await gateway.stop(), 0);
  return gateway
    .output()
    .split('\n')
    .filter((l) => l.startsWith('LOADED '));
}

function assertFromBundle(loaded: string[], name: string): void {
  assert.ok(
    loaded.some((l) => l.includes(`/dist/vendor/${name}.cjs`)),
    `${name} was loaded from dist/vendor/${name}.cjs`,
  );
  assert.deepEqual(
    loaded.filter((l) => l.includes(`/node_modules/${name}/`)),
    [],
    `nothing of ${name} was loaded from node_modules`,
  );
}

test('compiled build: the shipped gateway loads prom-client and pino from their one-file bundles, and no undici (the lean client proxies)', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const loaded = await modulesOfServing(t, join(repoRoot, 'config', 'system.yaml'), dir.path);
  assertFromBundle(loaded, 'prom-client');
  assertFromBundle(loaded, 'pino');
  assert.deepEqual(
    loaded.filter((l) => l.includes('undici')),
    [],
    'the proxied request went through the lean client',
  );
});

test('compiled build: with upstream.http1_client: undici, undici is loaded from its one-file bundle', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const system = join(dir.path, 'system.yaml');
  writeFileSync(
    system,
    `${readFileSync(join(repoRoot, 'config', 'system.yaml'), 'utf8')}\nupstream:\n  http1_client: undici\n`,
  );
  assertFromBundle(await modulesOfServing(t, system, dir.path), 'undici');
});
