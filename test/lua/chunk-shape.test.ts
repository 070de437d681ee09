import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LuaProgram, type ProgramOptions } from '../../src/lua/program.js';
import { requestContext } from '../support/plugin-env.js';

const OPTIONS: ProgramOptions = {
  timeoutMs: 5000,
  modulesDir: undefined,
  print: () => undefined,
  ports: ['success', 'respond'],
};

function program(source: string): LuaProgram {
  return LuaProgram.load([{ source, chunkName: '=test', label: 'inline' }], OPTIONS);
}

const STATIC: Record<string, string> = {
  'functions only': 'function execute(ctx) return ctx end',
  'helper and constant globals': `
    PREFIX = "x-"
    local LIMIT = 10
    local upper = string.upper
    local function tag(s) return PREFIX .. upper(s) end
    function execute(ctx) ctx.message.t = tag("a") .. LIMIT return ctx end`,
  'a nested function assigning its own upvalue': `
    function execute(ctx)
      local n = 0
      local function bump() n = n + 1 end
      bump() bump()
      ctx.message.n = n
      return ctx
    end`,
};

const DYNAMIC: Record<string, string> = {
  'a top-level table': 'local seen = {}\nfunction execute(ctx) seen[#seen + 1] = 1 return ctx end',
  'a top-level call': 'local started = os.time()\nfunction execute(ctx) return ctx end',
  'require at the top level': 'local ok = pcall(require, "x")\nfunction execute(ctx) return ctx end',
  'execute assigning a top-level local': 'local n = 0\nfunction execute(ctx) n = n + 1 return ctx end',
  'a deeper closure assigning a top-level local': `
    local n = 0
    function execute(ctx)
      local function bump() n = n + 1 end
      bump()
      return ctx
    end`,
  'execute replacing _ENV': 'function execute(ctx) _ENV = {} return ctx end',
  'a loop at the top level': 'for i = 1, 2 do end\nfunction execute(ctx) return ctx end',
};

for (const [name, source] of Object.entries(STATIC)) {
  test(`lua chunk shape: ${name} runs its top level once per program`, () => {
    assert.equal(program(source).staticUnits, 1);
  });
}

for (const [name, source] of Object.entries(DYNAMIC)) {
  test(`lua chunk shape: ${name} re-runs its top level for every request`, () => {
    assert.equal(program(source).staticUnits, 0);
  });
}

test('lua chunk shape: a static script sees its top-level globals but nothing the previous request assigned', () => {
  const p = program(`
    PREFIX = "x-"
    function execute(ctx)
      ctx.message.prefix = PREFIX
      ctx.message.had_mark = mark ~= nil
      ctx.message.had_raw = rawget(_G, "raw") ~= nil
      ctx.message.execute_is_function = type(execute) == "function"
      mark = true
      PREFIX = "changed-"
      execute = nil
      rawset(_G, "raw", true)
      ctx.message.changed = PREFIX
      return ctx
    end`);
  assert.equal(p.staticUnits, 1);
  for (let i = 0; i < 3; i++) {
    const ctx = requestContext();
    assert.equal(p.run(ctx), 'success');
    assert.deepEqual(ctx.message, {
      prefix: 'x-',
      had_mark: false,
      had_raw: false,
      execute_is_function: true,
      changed: 'changed-',
    });
  }
});

test('lua chunk shape: a static script cannot reach or replace the metatable of its globals', () => {
  const p = program(`
    function execute(ctx)
      ctx.message.meta = tostring(getmetatable(_G))
      ctx.message.set = select(2, pcall(setmetatable, _G, {}))
      return ctx
    end`);
  assert.equal(p.staticUnits, 1);
  const ctx = requestContext();
  p.run(ctx);
  assert.equal(ctx.message['meta'], 'false');
  assert.match(String(ctx.message['set']), /protected metatable/);
});

test('lua chunk shape: globals a failed request assigned are gone for the next one', () => {
  const p = program(`
    function execute(ctx)
      if ctx.request.headers["x-fail"] then
        left = "over"
        error("boom")
      end
      ctx.message.left = left or "none"
      return ctx
    end`);
  assert.equal(p.staticUnits, 1);
  assert.throws(() => p.run(requestContext({ headers: { 'x-fail': '1' } })), /boom/);
  const ctx = requestContext();
  p.run(ctx);
  assert.equal(ctx.message['left'], 'none');
});
