import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LuaProgram } from '../../src/lua/program.js';
import { requestContext } from '../support/plugin-env.js';

/** Runs `expr` inside execute and returns what it evaluated to, through ctx.message.v. */
function evaluate(expr: string): unknown {
  const p = LuaProgram.load(
    [
      {
        source: `function execute(ctx) ctx.message.v = (${expr}) return ctx end`,
        chunkName: '=t',
        label: 'inline',
      },
    ],
    { timeoutMs: 1000, modulesDir: undefined, print: () => undefined, ports: ['success'] },
  );
  const ctx = requestContext();
  p.run(ctx);
  return ctx.message['v'] ?? null;
}

test('lua sandbox: dangerous functions and libraries are absent', () => {
  for (const name of [
    'io',
    'debug',
    'package',
    'dofile',
    'loadfile',
    'collectgarbage',
    'os.execute',
    'os.getenv',
    'os.exit',
    'os.remove',
    'os.rename',
    'os.tmpname',
    'string.dump',
    'fengari',
  ]) {
    assert.equal(evaluate(`type(${name})`), 'nil', `${name} is reachable`);
  }
});

test('lua sandbox: string, table, math, utf8, os.time/clock/date and json are available', () => {
  assert.equal(evaluate('string.format("%s-%d", string.rep("a", 2), 3)'), 'aa-3');
  assert.equal(evaluate('("abc"):upper()'), 'ABC');
  assert.equal(evaluate('table.concat({ "a", "b" }, "+")'), 'a+b');
  assert.equal(evaluate('math.max(1, 5, 3)'), 5);
  assert.equal(evaluate('utf8.char(72, 105)'), 'Hi');
  assert.equal(
    evaluate(
      'type(os.time()) == "number" and type(os.clock()) == "number" and type(os.date("%Y")) == "string"',
    ),
    true,
  );
  assert.deepEqual(JSON.parse(String(evaluate('json.encode({ a = { 1, 2 } })'))), { a: [1, 2] });
  assert.equal(evaluate('json.decode(\'{"k":[true,2]}\').k[2]'), 2);
  assert.equal(evaluate('select(2, json.decode("{"))') !== null, true);
});

test('lua sandbox: json.encode of a context table sees every header', () => {
  const p = LuaProgram.load(
    [
      {
        source: 'function execute(ctx) ctx.message.h = json.encode(ctx.request.headers) return ctx end',
        chunkName: '=t',
        label: 'inline',
      },
    ],
    { timeoutMs: 1000, modulesDir: undefined, print: () => undefined, ports: ['success'] },
  );
  const ctx = requestContext({ headers: { host: 'gw', 'x-a': '1' } });
  p.run(ctx);
  assert.deepEqual(JSON.parse(String(ctx.message['h'])), { host: ['gw'], 'x-a': ['1'] });
});

test('lua sandbox: the standard library is read-only and the string metatable is hidden', () => {
  assert.match(String(evaluate('select(2, pcall(function() string.upper = nil end))')), /read-only/);
  assert.match(String(evaluate('select(2, pcall(rawset, math, "pi", 3))')), /read-only/);
  assert.equal(evaluate('getmetatable("")'), false);
  assert.equal(evaluate('getmetatable(_ENV)'), false);
});

test('lua sandbox (L7): string methods go through the sandboxed string table, so ("").dump is nil', () => {
  assert.equal(evaluate('type(("").dump)'), 'nil');
  assert.equal(evaluate('type(string.dump)'), 'nil');
  assert.equal(evaluate('("abc"):upper() .. ("x"):rep(3)'), 'ABCxxx');
});

test('lua sandbox: load accepts text chunks only and runs them in the caller environment', () => {
  assert.equal(evaluate('load("return 1 + 1")()'), 2);
  assert.equal(evaluate('(function() marker = 7 return load("return marker")() end)()'), 7);
  assert.equal(evaluate('select(2, load(string.char(27) .. "Lua"))') !== null, true);
  assert.equal(evaluate('type(load("return io")())'), 'nil');
});

test('lua sandbox: strings cross as UTF-8, invalid bytes become U+FFFD and a leading BOM is kept', () => {
  assert.equal(evaluate('"héllo " .. utf8.char(0x1F600)'), 'héllo 😀');
  assert.equal(evaluate('"a\\xffb"'), 'a\uFFFDb');
  assert.equal(evaluate('"\\xEF\\xBB\\xBFx"'), '\uFEFFx');
  assert.equal(evaluate('#"héllo"'), 6);
});
