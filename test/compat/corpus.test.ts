/**
 * Every configuration pair of the reference implementation's corpus must pass
 * `switchyard validate` once the node types it uses exist (COMPAT §7). Pairs
 * that still use unimplemented types are reported as skipped with the missing
 * types named, so the list shrinks visibly as plugins land.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseSystemConfig } from '../../src/config/system.js';
import { checkGatewayShape } from '../../src/config/gateway.js';
import { compileGateway } from '../../src/engine/compile.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { silentLogger } from '../../src/core/logger.js';
import { registry } from '../../src/plugins/index.js';
import { templateFactory } from '../../src/engine/templates.js';
import { expandBench } from '../support/compat-corpus.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const corpus = process.env.SWITCHYARD_COMPAT_CORPUS ?? join(repo, '..', 'shared', 'compat-corpus');

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory()
      ? walk(path)
      : path.endsWith('.yaml') || path.endsWith('.yml')
        ? [path]
        : [];
  });
}

const isGateway = (doc: Record<string, unknown>) =>
  ['routes', 'policies', 'supernodes', 'plugin_configs', 'stores', 'consumers'].some((k) => k in doc);

function nodeTypes(doc: Record<string, unknown>): Set<string> {
  const types = new Set<string>();
  for (const section of ['policies', 'supernodes']) {
    for (const graph of (doc[section] as { nodes?: { type?: string }[] }[] | undefined) ?? []) {
      for (const node of graph.nodes ?? []) if (node.type) types.add(node.type);
    }
  }
  for (const pc of (doc['plugin_configs'] as { type?: string }[] | undefined) ?? [])
    if (pc.type) types.add(pc.type);
  return types;
}

const STRUCTURAL = new Set(['supernode', 'input', 'output', 'error']);

/**
 * Files written before release 0.11.0 leave a script node's `respond` port
 * unwired; SPEC (Versioning 2) makes it mandatory, so they must be rejected —
 * for that reason and no other.
 */
const SCRIPT_RESPOND = {
  pattern: /output port 'respond' of node '[^']+' \(type 'script'\) must be wired/,
  why: "SPEC's mandatory script respond port",
};
const EXPECTED_REJECTIONS: Record<string, { pattern: RegExp; why: string }> = {
  'new/examples/lua-scripts/config/gateway.yaml': SCRIPT_RESPOND,
  'v0.3/examples/gateway-with-scripts.yaml': SCRIPT_RESPOND,
};

/**
 * 0.3 files predate the named outcome ports: their auth, CORS and limit nodes
 * left through `error`. SPEC makes outcome ports mandatory, so they must be
 * rejected — for unwired outcome ports and nothing else.
 */
const UNWIRED_OUTCOME = {
  pattern: /output port '(denied|redirect|preflight|limited)' of node '[^']+' \(type '[^']+'\) must be wired/,
  why: 'outcome ports added after 0.3',
};
for (const file of [
  'v0.3/e2e/fixtures/gateway.yaml',
  'v0.3/tests/config/gateway.yaml',
  'v0.3/tests/oidc-test.yml',
  'v0.3/website/screenshots/gateway.yaml',
]) {
  EXPECTED_REJECTIONS[file] = UNWIRED_OUTCOME;
}

// The bug-report repro new/dev/featherbit-45-gateway.yaml (issue 45: several edges enter one
// response-rewrite node) validates since fan-in is accepted into any node (F4).

const env = { HOME: '/tmp' };

/** The corpus README's "env vars with no default", set to plausible values. */
const FILE_ENV: Record<string, NodeJS.ProcessEnv> = {
  'new/tests/config/gateway.yaml': { CLIENT_ID: 'featherbit', CLIENT_SECRET: 'client-secret' },
  'new/dev/featherbit-45-gateway.yaml': {
    KEYCLOAK_HOST: 'keycloak',
    KEYCLOAK_PORT: '8443',
    REALM_NAME: 'featherbit',
    SESSION_SECRET: 'session-secret',
    DEPLOYMENT_BASE_URL: 'https://app.example.com',
    CLIENT_ID: 'featherbit',
    CLIENT_SECRET: 'client-secret',
  },
};

if (!existsSync(corpus)) {
  test('compat corpus: reference configuration files', { skip: `corpus not found at ${corpus}` }, () => {});
} else {
  const files = walk(corpus).filter((f) => !f.endsWith('README.md'));
  const docs = new Map(
    files.map((f) => {
      const text = f.includes('/bench/') ? expandBench(readFileSync(f, 'utf8')) : readFileSync(f, 'utf8');
      return [f, { text, doc: (parse(text) ?? {}) as Record<string, unknown> }] as const;
    }),
  );
  const plainSystem = join(corpus, 'new', 'examples', 'minimal', 'config', 'system.yaml');

  for (const [file, { text, doc }] of docs) {
    const name = relative(corpus, file);
    if (!isGateway(doc)) {
      test(`compat corpus: ${name} loads as system.yaml`, () => {
        const system = parseSystemConfig(text, env);
        assert.ok(system.listener.port >= 0);
      });
      continue;
    }
    // Partner: a system.yaml in the same folder, bench common/ for bench files, else the minimal one.
    const sibling = join(dirname(file), 'system.yaml');
    const partner = existsSync(sibling)
      ? sibling
      : file.includes('/bench/')
        ? join(corpus, 'new/bench/gateways/featherbit/common/system.yaml')
        : plainSystem;
    const missing = [...nodeTypes(doc)].filter((t) => !registry.has(t) && !STRUCTURAL.has(t));
    const title = `compat corpus: ${name} (with ${basename(dirname(partner))}/${basename(partner)}) validates`;
    if (missing.length > 0) {
      test(title, { skip: `node types not implemented yet: ${missing.sort().join(', ')}` }, () => {});
      continue;
    }
    const expected = EXPECTED_REJECTIONS[name];
    const fileEnv = { ...env, ...FILE_ENV[name] };
    if (expected !== undefined) {
      test(`compat corpus: ${name} is rejected only for ${expected.why}`, () => {
        try {
          compileGateway(checkGatewayShape(structuredClone(doc)), {
            registry,
            logger: silentLogger,
            env: fileEnv,
            templateFactory: templateFactory(fileEnv),
          });
        } catch (err) {
          if (!(err instanceof ConfigRejected)) throw err;
          assert.ok(err.issues.length > 0);
          for (const issue of err.issues) assert.match(issue.message, expected.pattern);
          return;
        }
        assert.fail(`expected ${name} to be rejected`);
      });
      continue;
    }
    test(title, () => {
      parseSystemConfig(docs.get(partner)?.text ?? readFileSync(partner, 'utf8'), env);
      try {
        const runtime = compileGateway(checkGatewayShape(structuredClone(doc)), {
          registry,
          logger: silentLogger,
          env: fileEnv,
          templateFactory: templateFactory(fileEnv),
        });
        void runtime.close();
      } catch (err) {
        if (err instanceof ConfigRejected) assert.fail(err.issues.map((i) => i.message).join('\n'));
        throw err;
      }
    });
  }
}
