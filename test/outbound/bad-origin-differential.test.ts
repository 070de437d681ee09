/**
 * Upstream bad framing, lean client vs undici (security review 3, "What held", and F-2; issue 38
 * item 2): every mode of bad-origin-modes.ts goes through a gateway on the lean HTTP/1.1 client and
 * one on `upstream.http1_client: undici`, each followed at once by a request for `/ok` from another
 * client, which the gateway sends on its pooled connection when it kept one. The follow-up must
 * always get the origin's own `GOOD` answer and nothing of the bad one; the bad answer itself must
 * reach the client as undici's does, unless the mode is in DIFFERENT with the reason.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { MODES, SMUGGLED_HEADERS, type Mode } from './bad-origin-modes.js';
import { ask, startBadOrigin, type Answer, type BadOrigin } from './bad-origin.js';

/** Modes where the lean client answers otherwise than undici, on purpose. */
const DIFFERENT: Readonly<Record<string, string>> = {
  '100-then-200':
    'undici refuses a 100 Continue it did not ask for (502); the lean client skips 1xx answers, as RFC 9110 §15.2 asks of a client',
  '100-train-2000': 'the same: 2000 interim 100 answers, then the final one, which the lean client delivers',
};

/** Bounds the hang and cut-body modes; the gateway's answer then is 504 or a cut body. */
const TIMEOUT_MS = 500;

function gatewayYaml(port: number): string {
  return `
routes:
  - { name: all, match: { path: /* }, policy: up }
policies:
  - name: up
    nodes:
      - { id: in, type: listener }
      - id: up
        type: upstream
        config:
          targets: [{ host: 127.0.0.1, port: ${port} }]
          timeout_ms: ${TIMEOUT_MS}
          stream_idle_timeout_ms: ${TIMEOUT_MS}
          health_check: { passive: { max_fails: 0 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;
}

interface Side {
  origin: BadOrigin;
  gateway: RunningGateway;
}

const sides: Record<'lean' | 'undici', Side> = {} as Record<'lean' | 'undici', Side>;

before(async () => {
  for (const client of ['lean', 'undici'] as const) {
    const origin = await startBadOrigin();
    const gateway = await startGateway(gatewayYaml(origin.port), {
      systemYaml: `listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { shutdown_timeout_seconds: 2 }\nupstream: { http1_client: ${client} }\n`,
    });
    sides[client] = { origin, gateway };
  }
});

after(async () => {
  for (const side of Object.values(sides)) {
    await side.gateway.stop();
    await side.origin.close();
  }
});

/** What a user of the gateway sees of an answer: error answers by their catalog code, not their wording. */
function seen(answer: Answer): unknown {
  let body: unknown = answer.body;
  if (answer.status >= 500 && answer.headers['content-type']?.includes('json') === true) {
    const json = JSON.parse(answer.body) as { error?: string; code?: string };
    body = { error: json.error, code: json.code };
  }
  return {
    status: answer.status,
    empty: answer.empty,
    body,
    trailing: answer.trailing,
    smuggled: SMUGGLED_HEADERS.filter((name) => answer.headers[name] !== undefined),
  };
}

/** The bad exchange, then the follow-up from another client; the follow-up is checked here. */
async function through(side: Side, mode: Mode): Promise<Answer> {
  const answered = mode.bodyAfterAnswer === true ? side.origin.nextAnswer() : undefined;
  const bad = await ask(side.gateway.port, mode.method ?? 'GET', `/bad/${mode.name}`, {
    ...(answered === undefined ? {} : { bodyAfter: answered }),
  });
  await side.origin.settle(3_000);
  const next = await ask(side.gateway.port, 'GET', '/ok');
  assert.equal(next.status, 200, `follow-up status after ${mode.name}`);
  assert.match(next.body, /^GOOD c=\d+ n=\d+$/, `follow-up body after ${mode.name}`);
  assert.deepEqual(
    SMUGGLED_HEADERS.filter((name) => next.headers[name] !== undefined),
    [],
    `follow-up headers after ${mode.name}`,
  );
  assert.equal(next.trailing, '', `follow-up trailing bytes after ${mode.name}`);
  return bad;
}

for (const mode of MODES) {
  test(`F-2 differential: bad origin ${mode.name}: the next client gets the origin's GOOD; the lean client answers as undici does`, async () => {
    const lean = seen(await through(sides.lean, mode));
    const undici = seen(await through(sides.undici, mode));
    const reason = DIFFERENT[mode.name];
    if (reason === undefined) assert.deepEqual(lean, undici);
    else assert.notDeepEqual(lean, undici, `${mode.name} is listed as different (${reason}) but is not`);
  });
}

test('F-2 differential: the suite covers the review’s 66 modes and more', () => {
  assert.ok(MODES.length >= 66, `${MODES.length} modes`);
  for (const name of Object.keys(DIFFERENT))
    assert.ok(
      MODES.some((m) => m.name === name),
      `${name} is listed but is no mode`,
    );
});
