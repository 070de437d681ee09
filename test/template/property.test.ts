import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileTemplate } from '../../src/template/index.js';
import { makeContext } from './fixtures.js';

/** mulberry32: a small seeded generator, so a failure replays exactly. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Building blocks of both syntaxes, their near misses, and awkward characters.
// prettier-ignore
const TOKENS = [
  '{{', '}}', '{', '}', '$', '${', ' ', '\t', '\n', '.', '-', '_', '5',
  'request', 'response', 'message', 'client', 'env', 'body', 'mustache',
  'headers', 'query', 'cookies', 'method', 'status', 'ip', 'x', 'a',
  'host', 'uri', 'msg_', 'http_', 'arg_', 'sent_http_', 'post_arg_', 'HOME',
  'constructor', '__proto__', 'é', '😀', '"', '\\', '%', '&', '=', '?',
  '{{request.headers.x}}', '$host', '${msg_a.b}', '{{ $1 }}', '{{env.HOME}}',
];

function randomString(next: () => number, maxTokens: number): string {
  let out = '';
  const count = Math.floor(next() * maxTokens);
  for (let i = 0; i < count; i++) out += TOKENS[Math.floor(next() * TOKENS.length)] ?? '';
  return out;
}

const SEED = 0x5e1ec7;
const RUNS = 3000;

void test('template property: random text never throws at parse or render, and renders deterministically', () => {
  const next = random(SEED);
  for (let run = 0; run < RUNS; run++) {
    const text = randomString(next, 24);
    const ctx = makeContext({ status: 200, message: { a: 1, 'a.b': { c: [2] }, x: null } });
    for (const legacy of [false, true]) {
      for (const phase of ['request', 'response'] as const) {
        const label = `seed ${SEED} run ${run}: ${JSON.stringify(text)} legacy=${legacy} phase=${phase}`;
        let output = '';
        assert.doesNotThrow(() => {
          const template = compileTemplate(text, { legacy, phase, warn: () => undefined });
          output = template.render(ctx);
          assert.equal(template.render(ctx), output, label);
          assert.equal(template.source, text, label);
        }, label);
        if (!text.includes('{{') && (!legacy || !text.includes('$'))) assert.equal(output, text, label);
      }
    }
  }
});

void test('template property: text without `$` renders the same with and without the legacy pass', () => {
  const next = random(SEED + 1);
  const ctx = makeContext({ status: 200 });
  for (let run = 0; run < RUNS; run++) {
    const text = randomString(next, 16).replaceAll('$', '');
    const plain = compileTemplate(text, { warn: () => undefined }).render(ctx);
    const legacy = compileTemplate(text, { legacy: true, warn: () => undefined }).render(ctx);
    assert.equal(legacy, plain, `seed ${SEED + 1} run ${run}: ${JSON.stringify(text)}`);
  }
});

void test('template property: request-derived values holding `{{…}}` or `$host` come out verbatim', () => {
  const next = random(SEED + 2);
  for (let run = 0; run < RUNS; run++) {
    const value = `${randomString(next, 6)}{{request.headers.x}}${randomString(next, 6)}$host${randomString(next, 6)}`;
    const ctx = makeContext({
      url: `/?q=${encodeURIComponent(value)}`,
      headers: { x: value, cookie: `c=${encodeURIComponent(value)}` },
      body: Buffer.from(value),
      status: 200,
      responseHeaders: { y: value },
      responseBody: value,
      message: { m: value, 'm.d': value },
    });
    const label = `seed ${SEED + 2} run ${run}: ${JSON.stringify(value)}`;
    const pairs: [string, string][] = [
      ['{{request.headers.x}}', '$http_x'],
      ['{{request.query.q}}', '$arg_q'],
      ['{{request.cookies.c}}', '$cookie_c'],
      ['{{request.body}}', '$request_body'],
      ['{{response.headers.y}}', '$sent_http_y'],
      ['{{response.body}}', '$resp_body'],
      ['{{message.m}}', '$msg_m'],
      ['{{message.m.d}}', '${msg_m.d}'],
    ];
    for (const [reference, variable] of pairs) {
      const options = { legacy: true, phase: 'response' as const };
      assert.equal(
        compileTemplate(`<${reference}>`, options).render(ctx),
        `<${value}>`,
        `${label} ${reference}`,
      );
      assert.equal(
        compileTemplate(`<${variable}>`, options).render(ctx),
        `<${value}>`,
        `${label} ${variable}`,
      );
    }
  }
});
