/**
 * `workers: 2`: a browser session made on one worker opens on the other
 * (docs/workers.md#metrics-traces-sessions), with a real CAS login.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startCasServer, type CasServer } from '../support/cas-server.js';
import { request } from '../support/http.js';
import { servedDuring, startClusterGateway, waitForWorkers, type ClusterGateway } from './harness.js';

const gatewayYaml = `
routes:
  - { name: app, match: { path: /app/* }, policy: sso }
policies:
  - name: sso
    nodes:
      - { id: in, type: listener }
      - id: cas
        type: cas-auth
        config:
          idp_uri: \${CAS_URL}
          session_secret: \${SESSION_SECRET}
          session_storage: cookie
      - { id: show, type: echo, config: { body: 'hello {{message.user}}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: cas.in }
      - { from: cas.success, to: show.in }
      - { from: cas.denied, to: out.in }
      - { from: cas.redirect, to: out.in }
      - { from: show.success, to: out.in }
`;

let cas: CasServer;
let gw: ClusterGateway;

before(async () => {
  cas = await startCasServer();
  gw = await startClusterGateway(gatewayYaml, {
    env: { CAS_URL: cas.url, SESSION_SECRET: 'one secret for every worker' },
  });
  await waitForWorkers(gw, 2);
});

after(async () => {
  await gw?.stop();
  await cas?.close();
});

test('workers: a CAS session made on one worker opens on both', async () => {
  const service = `${gw.data}/app/home`;
  let cookie = '';
  const login = await servedDuring(gw, async () => {
    const res = await request(`${service}?ticket=${cas.issueTicket('alice', service)}`);
    assert.equal(res.status, 302, res.body);
    const set = (res.headers['set-cookie'] ?? []).find((c) => c.startsWith('cas_session='));
    assert.ok(set !== undefined, JSON.stringify(res.headers));
    cookie = set.slice(0, set.indexOf(';'));
  });
  assert.equal(login.filter((n) => n > 0).length, 1, `one worker made the session: ${login.join(', ')}`);
  const served = await servedDuring(gw, async () => {
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => request(`${gw.data}/app/home`, { headers: { cookie } })),
    );
    assert.deepEqual(new Set(answers.map((a) => `${a.status} ${a.body}`)), new Set(['200 hello alice']));
  });
  assert.ok(
    served.every((n) => n > 0),
    `both workers opened the session: ${served.join(', ')}`,
  );
  // Without the cookie the same requests are sent to log in: the session is what admitted them.
  const anonymous = await request(`${gw.data}/app/home`);
  assert.equal(anonymous.status, 302);
});
