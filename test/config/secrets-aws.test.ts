import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { bindSecrets, createSecretStore } from '../../src/config/secrets/index.js';
import { compileWith } from '../../src/plugins/compile-with.js';
import { silentLogger } from '../../src/core/logger.js';
import { startAwsSecretsServer, type AwsSecretsServer } from '../support/aws-secrets-server.js';

const REGION = 'eu-west-1';

/** A store with the aws manager of `yaml` extra keys, reading through `env`. */
function awsStore(server: AwsSecretsServer, extra: string, env: NodeJS.ProcessEnv = {}) {
  const system = parseSystemConfig(
    `secrets:\n  aws: { region: ${REGION}, endpoint: '${server.url}'${extra === '' ? '' : `, ${extra}`} }\n`,
    {},
  );
  const store = createSecretStore(system.secrets, silentLogger, env)!;
  bindSecrets(env, store);
  return { store, env };
}

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('secret references: the aws manager against a SigV4-checking Secrets Manager', () => {
  let aws: AwsSecretsServer;
  before(async () => {
    aws = await startAwsSecretsServer(REGION);
    aws.addCredentials('AKIASTATIC', 'static-secret-key');
    aws.addCredentials('AKIATEMP', 'temp-secret-key', 'temp-session-token');
    aws.putSecret('prod/billing', JSON.stringify({ api_key: 'aws-key-41a7', user: 'svc' }));
    aws.putSecret('prod/plain', 'a-whole-secret-string');
  });
  after(() => aws.close());

  test('static keys: FIELD is a JSON key of SecretString, none is the whole string; the signature is checked', async () => {
    const { store, env } = awsStore(aws, 'access_key_id: AKIASTATIC, secret_access_key: static-secret-key');
    const config = parseGatewayConfig(`
routes: [{ name: r, match: { path: /r }, policy: p }]
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { keys: ['\${secret:aws:prod/billing#api_key}', '\${secret:aws:prod/plain}'] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: out.in }
      - { from: auth.denied, to: out.in }
`);
    await store.prepare(config);
    assert.equal(store.value('${secret:aws:prod/billing#api_key}'), 'aws-key-41a7');
    assert.equal(store.value('${secret:aws:prod/plain}'), 'a-whole-secret-string');
    const runtime = compileWith(config, silentLogger, env);
    void runtime.close();
    const calls = aws.requests.filter((r) => r.accessKeyId === 'AKIASTATIC');
    assert.ok(calls.length >= 2);
    assert.ok(calls.every((r) => r.verdict === 'ok' && r.target === 'secretsmanager.GetSecretValue'));
    store.close();
  });

  test('a wrong secret key is refused by the signature check and the error names it, not the key', async () => {
    const { store } = awsStore(aws, 'access_key_id: AKIASTATIC, secret_access_key: not-the-key');
    const ref = '${secret:aws:prod/billing#api_key}';
    await store.prepare(ref);
    assert.equal(store.value(ref), undefined);
    const why = store.problem({ text: ref, manager: 'aws', path: 'prod/billing', field: 'api_key' }) ?? '';
    assert.match(why, /403 InvalidSignatureException/);
    assert.doesNotMatch(why, /not-the-key/);
    const missing = '${secret:aws:prod/absent#x}';
    const { store: good } = awsStore(aws, 'access_key_id: AKIASTATIC, secret_access_key: static-secret-key');
    await good.prepare(missing);
    assert.match(
      good.problem({ text: missing, manager: 'aws', path: 'prod/absent', field: 'x' }) ?? '',
      /400 ResourceNotFoundException/,
    );
    store.close();
    good.close();
  });

  test('the environment chain: AWS_ACCESS_KEY_ID/SECRET/SESSION_TOKEN', async () => {
    const { store } = awsStore(aws, '', {
      AWS_ACCESS_KEY_ID: 'AKIATEMP',
      AWS_SECRET_ACCESS_KEY: 'temp-secret-key',
      AWS_SESSION_TOKEN: 'temp-session-token',
    });
    await store.prepare('${secret:aws:prod/billing#user}');
    assert.equal(store.value('${secret:aws:prod/billing#user}'), 'svc');
    store.close();
  });

  test('container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI with AWS_CONTAINER_AUTHORIZATION_TOKEN', async () => {
    const seen: (string | undefined)[] = [];
    const agent = await listen((req, res) => {
      seen.push(req.headers['authorization']);
      if (req.headers['authorization'] !== 'container-auth-token') return void res.writeHead(401).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          AccessKeyId: 'AKIATEMP',
          SecretAccessKey: 'temp-secret-key',
          Token: 'temp-session-token',
          Expiration: new Date(Date.now() + 3600_000).toISOString(),
        }),
      );
    });
    try {
      const { store } = awsStore(aws, '', {
        AWS_CONTAINER_CREDENTIALS_FULL_URI: `${agent.url}/creds`,
        AWS_CONTAINER_AUTHORIZATION_TOKEN: 'container-auth-token',
      });
      await store.prepare('${secret:aws:prod/billing#api_key}');
      assert.equal(store.value('${secret:aws:prod/billing#api_key}'), 'aws-key-41a7');
      assert.deepEqual(seen, ['container-auth-token']);
      store.close();
    } finally {
      agent.server.close();
    }
  });

  test('instance metadata (IMDSv2: token, role, credentials), and none when AWS_EC2_METADATA_DISABLED', async () => {
    const imds = await listen((req, res) => {
      if (req.method === 'PUT' && req.url === '/latest/api/token')
        return void res.writeHead(200).end('imds-session-token');
      if (req.headers['x-aws-ec2-metadata-token'] !== 'imds-session-token')
        return void res.writeHead(401).end();
      if (req.url === '/latest/meta-data/iam/security-credentials/')
        return void res.writeHead(200).end('gw-role');
      if (req.url === '/latest/meta-data/iam/security-credentials/gw-role')
        return void res.writeHead(200).end(
          JSON.stringify({
            Code: 'Success',
            AccessKeyId: 'AKIATEMP',
            SecretAccessKey: 'temp-secret-key',
            Token: 'temp-session-token',
            Expiration: new Date(Date.now() + 3600_000).toISOString(),
          }),
        );
      res.writeHead(404).end();
    });
    try {
      const { store } = awsStore(aws, '', { AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url });
      await store.prepare('${secret:aws:prod/plain}');
      assert.equal(store.value('${secret:aws:prod/plain}'), 'a-whole-secret-string');
      store.close();
      const { store: off } = awsStore(aws, '', {
        AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url,
        AWS_EC2_METADATA_DISABLED: 'true',
      });
      await off.prepare('${secret:aws:prod/plain}');
      assert.match(
        off.problem({
          text: '${secret:aws:prod/plain}',
          manager: 'aws',
          path: 'prod/plain',
          field: undefined,
        }) ?? '',
        /no credentials/,
      );
      off.close();
    } finally {
      imds.server.close();
    }
  });
});
