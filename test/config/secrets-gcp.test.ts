/**
 * Issue 35 item 2, `gcp`: Secret Manager `versions/latest:access` with a service-account key
 * (signed JWT → OAuth access token at the key's token_uri), against a local server that checks the
 * JWT's signature with the public half of the key (test/support/gcp-secrets-server.ts); and
 * without a key, with the metadata server's token (GKE workload identity, a GCE VM), against a
 * local metadata server speaking its wire format (test/support/gcp-metadata-server.ts).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, mock, test } from 'node:test';
import { parseSystemConfig } from '../../src/config/system.js';
import { bindSecrets, createSecretStore } from '../../src/config/secrets/index.js';
import { GcpSecretManager } from '../../src/config/secrets/gcp.js';
import { loadSecrets } from '../../src/config/secrets/load.js';
import { silentLogger } from '../../src/core/logger.js';
import { startGcpMetadataServer, type GcpMetadataServer } from '../support/gcp-metadata-server.js';
import { startGcpSecretsServer, type GcpSecretsServer } from '../support/gcp-secrets-server.js';
import { tempDir } from '../support/temp-dir.js';

const dir = tempDir('switchyard-secrets-gcp-');
after(() => dir.remove());

function gcpStore(extra: string, env: NodeJS.ProcessEnv = {}) {
  const system = parseSystemConfig(`secrets:\n  gcp: { ${extra} }\n`, {});
  const store = createSecretStore(system.secrets, silentLogger, env)!;
  bindSecrets(env, store);
  return store;
}

function problem(store: ReturnType<typeof gcpStore>, text: string): string {
  const m = /^\$\{secret:gcp:([^#}]+)(?:#([^}]+))?\}$/.exec(text)!;
  return store.problem({ text, manager: 'gcp', path: m[1]!, field: m[2] }) ?? '';
}

describe('secret references: the gcp manager against a JWT-checking Secret Manager', () => {
  let gcp: GcpSecretsServer;
  let keyFile: string;
  let key: Record<string, string>;
  before(async () => {
    gcp = await startGcpSecretsServer();
    key = gcp.addServiceAccount('switchyard@shop-prod.iam.gserviceaccount.com', 'shop-prod');
    keyFile = join(dir.path, 'key.json');
    writeFileSync(keyFile, JSON.stringify(key));
    gcp.putSecret('shop-prod', 'billing', JSON.stringify({ api_key: 'gcp-key-5d21', user: 'svc' }));
    gcp.putSecret('shop-prod', 'plain', 'gcp-plain-v1');
    gcp.putSecret('shop-prod', 'plain', 'gcp-plain-v2');
  });
  after(() => gcp.close());

  test('a signed JWT buys an access token that reads payload.data; FIELD is a JSON key, none the whole value; one token for many reads', async () => {
    const store = gcpStore(`endpoint: '${gcp.url}', credentials_file: '${keyFile}'`);
    await store.prepare(
      '${secret:gcp:billing#api_key} ${secret:gcp:plain} ${secret:gcp:plain/versions/1} ${secret:gcp:projects/shop-prod/secrets/billing#user}',
    );
    assert.equal(store.value('${secret:gcp:billing#api_key}'), 'gcp-key-5d21');
    assert.equal(store.value('${secret:gcp:plain}'), 'gcp-plain-v2', 'latest is the newest version');
    assert.equal(store.value('${secret:gcp:plain/versions/1}'), 'gcp-plain-v1');
    assert.equal(store.value('${secret:gcp:projects/shop-prod/secrets/billing#user}'), 'svc');
    const tokenCalls = gcp.requests.filter((r) => r.path === '/token');
    assert.equal(tokenCalls.length, 1, 'the reads of a round share one token');
    assert.equal(tokenCalls[0]?.verdict, 'ok', 'the JWT signature verified with the public key');
    const reads = gcp.requests.filter((r) => r.path.endsWith(':access'));
    assert.ok(reads.some((r) => r.path === '/v1/projects/shop-prod/secrets/billing/versions/latest:access'));
    assert.ok(reads.every((r) => r.verdict === 'ok' && r.bearer === gcp.issued[0]));
    // A second round reuses the token.
    await store.refresh('gcp');
    assert.equal(gcp.requests.filter((r) => r.path === '/token').length, 1);
    store.close();
  });

  test('a key whose private half is not the registered one is refused at the token endpoint; the error never quotes the key', async () => {
    const other = gcp.addServiceAccount('other@shop-prod.iam.gserviceaccount.com', 'shop-prod');
    // The registered key id and email, signed with another private key.
    const forged = join(dir.path, 'forged.json');
    writeFileSync(forged, JSON.stringify({ ...key, private_key: other.private_key }));
    const store = gcpStore(`endpoint: '${gcp.url}', credentials_file: '${forged}'`);
    const ref = '${secret:gcp:billing#api_key}';
    await store.prepare(ref);
    assert.equal(store.value(ref), undefined);
    const why = problem(store, ref);
    assert.match(why, /gcp: token request refused: 400 invalid_grant: Invalid JWT Signature/);
    assert.ok(!why.includes('PRIVATE KEY'));
    assert.match(gcp.requests.filter((r) => r.path === '/token').at(-1)?.verdict ?? '', /^refused/);
    store.close();
  });

  test('Google errors are named: 404 for a missing secret, 403 for another project, a reference without a project', async () => {
    const store = gcpStore(`endpoint: '${gcp.url}', credentials_file: '${keyFile}'`);
    const missing = '${secret:gcp:absent}';
    const elsewhere = '${secret:gcp:projects/shop-dev/secrets/billing#api_key}';
    await store.prepare(`${missing} ${elsewhere}`);
    assert.match(
      problem(store, missing),
      /gcp: projects\/shop-prod\/secrets\/absent\/versions\/latest: 404 NOT_FOUND/,
    );
    assert.match(problem(store, elsewhere), /403 PERMISSION_DENIED/);
    store.close();
    const noProject = join(dir.path, 'no-project.json');
    const { project_id: _p, ...rest } = key;
    writeFileSync(noProject, JSON.stringify(rest));
    const bare = gcpStore(`endpoint: '${gcp.url}', credentials_file: '${noProject}'`);
    await bare.prepare('${secret:gcp:billing#api_key}');
    assert.match(
      problem(bare, '${secret:gcp:billing#api_key}'),
      /names no project \(set secrets\.gcp\.project/,
    );
    bare.close();
    const configured = gcpStore(
      `endpoint: '${gcp.url}', credentials_file: '${noProject}', project: shop-prod`,
    );
    await configured.prepare('${secret:gcp:billing#api_key}');
    assert.equal(configured.value('${secret:gcp:billing#api_key}'), 'gcp-key-5d21');
    configured.close();
  });

  test('a revoked access token (401) is replaced once, and the read succeeds', async () => {
    const manager = new GcpSecretManager(
      parseSystemConfig(`secrets:\n  gcp: { endpoint: '${gcp.url}', credentials_file: '${keyFile}' }\n`, {})
        .secrets!.gcp!,
      {},
    );
    assert.equal(await manager.load('plain'), 'gcp-plain-v2');
    const tokens = () => gcp.requests.filter((r) => r.path === '/token').length;
    const before = tokens();
    gcp.revokeTokens();
    assert.equal(await manager.load('plain'), 'gcp-plain-v2');
    assert.equal(tokens(), before + 1);
    manager.close();
  });

  test('GOOGLE_APPLICATION_CREDENTIALS names the key when credentials_file is unset', async () => {
    const store = gcpStore(`endpoint: '${gcp.url}'`, { GOOGLE_APPLICATION_CREDENTIALS: keyFile });
    await store.prepare('${secret:gcp:billing#user}');
    assert.equal(store.value('${secret:gcp:billing#user}'), 'svc');
    store.close();
  });
});

describe('secret references: the gcp manager on GKE / GCE, credentials from the metadata server', () => {
  const EMAIL = 'gateway@shop-prod.iam.gserviceaccount.com';
  let gcp: GcpSecretsServer;
  let metadata: GcpMetadataServer;
  before(async () => {
    gcp = await startGcpSecretsServer();
    // The workload's service account: bound to the pod, no key file anywhere.
    gcp.addServiceAccount(EMAIL, 'shop-prod');
    gcp.putSecret('shop-prod', 'billing', JSON.stringify({ api_key: 'gke-key-77aa' }));
    metadata = await startGcpMetadataServer({ project: 'shop-prod', mint: () => gcp.issueToken(EMAIL) });
  });
  after(async () => {
    mock.timers.reset();
    await Promise.all([gcp.close(), metadata.close()]);
  });

  test('no key file: the token and the project come from GCE_METADATA_HOST with Metadata-Flavor: Google; the token is kept until it nears expiry', async () => {
    mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const store = gcpStore(`endpoint: '${gcp.url}'`, { GCE_METADATA_HOST: metadata.host });
    const ref = '${secret:gcp:billing#api_key}';
    await store.prepare(ref);
    assert.equal(store.value(ref), 'gke-key-77aa', problem(store, ref));
    assert.deepEqual(
      metadata.requests.map((r) => [r.path, r.flavor, r.status]),
      [
        ['/computeMetadata/v1/project/project-id', true, 200],
        ['/computeMetadata/v1/instance/service-accounts/default/token', true, 200],
      ],
    );
    const reads = () => gcp.requests.filter((r) => r.path.endsWith(':access'));
    assert.equal(reads().at(-1)?.path, '/v1/projects/shop-prod/secrets/billing/versions/latest:access');
    assert.equal(reads().at(-1)?.bearer, gcp.issued[0], 'the metadata server’s token was sent');
    assert.equal(gcp.requests.filter((r) => r.path === '/token').length, 0, 'no JWT exchange');

    // Within its life the token (and the project) are reused: no metadata request.
    mock.timers.tick(3000 * 1000);
    await store.refresh('gcp');
    assert.equal(metadata.requests.length, 2);
    // 5 minutes before it expires (the metadata server's own cache margin), a new one is asked for.
    mock.timers.tick(301 * 1000);
    await store.refresh('gcp');
    assert.equal(metadata.requests.length, 3);
    assert.equal(
      metadata.requests.at(-1)?.path,
      '/computeMetadata/v1/instance/service-accounts/default/token',
    );
    assert.equal(gcp.issued.length, 2);
    assert.equal(reads().at(-1)?.bearer, gcp.issued[1]);
    assert.equal(store.value(ref), 'gke-key-77aa');
    store.close();
    mock.timers.reset();
  });

  test('`project` set: no project-id read; an answer without Metadata-Flavor: Google is not trusted; no metadata server names both ways to fix it', async () => {
    metadata.requests.length = 0;
    const configured = gcpStore(`endpoint: '${gcp.url}', project: shop-prod`, {
      GCE_METADATA_HOST: `http://${metadata.host}`,
    });
    await configured.prepare('${secret:gcp:billing#api_key}');
    assert.equal(configured.value('${secret:gcp:billing#api_key}'), 'gke-key-77aa');
    assert.deepEqual(
      metadata.requests.map((r) => r.path),
      ['/computeMetadata/v1/instance/service-accounts/default/token'],
    );
    configured.close();

    const impostor = await startGcpMetadataServer({
      project: 'shop-prod',
      mint: () => gcp.issueToken(EMAIL),
      noFlavor: true,
    });
    const fooled = gcpStore(`endpoint: '${gcp.url}', project: shop-prod`, {
      GCE_METADATA_HOST: impostor.host,
    });
    await fooled.prepare('${secret:gcp:billing#api_key}');
    assert.equal(fooled.value('${secret:gcp:billing#api_key}'), undefined);
    assert.match(problem(fooled, '${secret:gcp:billing#api_key}'), /has no Metadata-Flavor: Google header/);
    fooled.close();
    await impostor.close();

    // Off Google Cloud (nothing listens there): the reference fails naming the key file options.
    const gone = await startGcpMetadataServer({ project: 'x', mint: () => gcp.issueToken(EMAIL) });
    const deadHost = gone.host;
    await gone.close();
    const none = gcpStore(`endpoint: '${gcp.url}'`, { GCE_METADATA_HOST: deadHost });
    await none.prepare('${secret:gcp:billing#api_key}');
    assert.match(
      problem(none, '${secret:gcp:billing#api_key}'),
      /no credentials_file or GOOGLE_APPLICATION_CREDENTIALS, and the metadata server http:\/\/127\.0\.0\.1:\d+ \(project id\) did not answer: ECONNREFUSED/,
    );
    none.close();
    // At start and in `validate`: such a reference is a load issue naming its key path.
    const system = parseSystemConfig(
      `secrets:\n  gcp: { endpoint: '${gcp.url}' }\nadmin: { username: admin, password: '\${secret:gcp:billing#api_key}' }\n`,
      {},
    );
    const { issues } = await loadSecrets(system, silentLogger, undefined, { GCE_METADATA_HOST: deadHost });
    assert.deepEqual(
      issues.map((i) => i.path),
      ['admin.password'],
    );
    assert.match(issues[0]?.message ?? '', /metadata server/);
  });
});
