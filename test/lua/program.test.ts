import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NodeError } from '../../src/core/errors.js';
import { LuaProgram, ScriptLoadError, type ProgramOptions } from '../../src/lua/program.js';
import { requestContext } from '../support/plugin-env.js';
import { tempDir } from '../support/temp-dir.js';

const OPTIONS: ProgramOptions = {
  timeoutMs: 5000,
  modulesDir: undefined,
  print: () => undefined,
  ports: ['success', 'respond'],
};

function program(source: string, options: Partial<ProgramOptions> = {}): LuaProgram {
  return LuaProgram.load([{ source, chunkName: '=test', label: 'inline' }], { ...OPTIONS, ...options });
}

function failure(run: () => unknown): NodeError {
  try {
    run();
  } catch (err) {
    assert.ok(err instanceof NodeError, `expected a NodeError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the run to fail');
}

function loadFailure(load: () => unknown): ScriptLoadError {
  try {
    load();
  } catch (err) {
    assert.ok(err instanceof ScriptLoadError, `expected a ScriptLoadError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the load to fail');
}

test('lua: the context round-trips headers, query, body, method, path and message keys with dots', () => {
  const p = program(`
    function execute(ctx)
      local r = ctx.request
      r.headers["x-seen"] = { r.headers["x-in"][1] .. "!", "second" }
      r.headers["x-drop"] = nil
      r.query_params.page = { "2" }
      r.body = string.upper(r.body)
      r.method = "POST"
      r.path = r.path .. "/more"
      ctx.message["consumer.name"] = ctx.message["consumer.name"] .. "-lua"
      ctx.message["a.b.c"] = { list = { 1, 2, 3 }, flag = true, n = 1.5 }
      ctx.response.status_code = 201
      ctx.response.headers["x-out"] = "one"
      ctx.response.body = "made in lua"
      return ctx
    end`);
  const ctx = requestContext({
    method: 'GET',
    url: '/items?page=1&tag=a&tag=b',
    headers: { host: 'gw', 'x-in': 'hello', 'x-drop': 'bye' },
    body: Buffer.from('payload'),
  });
  ctx.message['consumer.name'] = 'alice';
  assert.equal(p.run(ctx), 'success');
  const req = ctx.request;
  assert.deepEqual(req.headers['x-seen'], ['hello!', 'second']);
  assert.equal(req.headers['x-drop'], undefined);
  assert.equal(req.headers.host, 'gw');
  assert.deepEqual(req.query.get('page'), ['2']);
  assert.deepEqual(req.query.get('tag'), ['a', 'b']);
  assert.equal(req.body?.toString(), 'PAYLOAD');
  assert.equal(req.method, 'POST');
  assert.equal(req.path, '/items/more');
  assert.deepEqual(ctx.message, {
    'consumer.name': 'alice-lua',
    'a.b.c': { list: [1, 2, 3], flag: true, n: 1.5 },
  });
  assert.equal(ctx.response.status, 201);
  assert.equal(ctx.response.headers['x-out'], 'one');
  assert.equal(ctx.response.body?.toString(), 'made in lua');
});

test('lua: a script that only reads leaves the context as it was (raw query kept byte for byte)', () => {
  const p = program(`
    function execute(ctx)
      local seen = ctx.request.headers["x-in"][1] .. ctx.request.query_params.q[1] .. #ctx.request.body
      for name, values in pairs(ctx.request.headers) do seen = seen .. name end
      return ctx
    end`);
  const ctx = requestContext({
    url: '/p?q=a%20b&z',
    headers: { host: 'gw', 'x-in': 'v', cookie: ['a=1', 'b=2'] },
  });
  const headers = ctx.request.headers;
  p.run(ctx);
  assert.equal(ctx.request.url, '/p?q=a%20b&z');
  assert.deepEqual(ctx.request.headers, headers);
  assert.equal(ctx.response.body, null);
});

test('lua: pairs sees every header, including ones not read yet', () => {
  const p = program(`
    function execute(ctx)
      local names = {}
      for name in pairs(ctx.request.headers) do names[#names + 1] = name end
      table.sort(names)
      ctx.message.names = table.concat(names, ",")
      return ctx
    end`);
  const ctx = requestContext({ headers: { host: 'gw', b: '1', a: '2' } });
  p.run(ctx);
  assert.equal(ctx.message['names'], 'a,b,host');
});

test('lua: ctx.errors shows the errors recorded so far and is carried through unchanged', () => {
  const p = program(`
    function execute(ctx)
      ctx.message.first = ctx.errors[1].code
      ctx.errors = {}
      return ctx
    end`);
  const ctx = requestContext();
  ctx.errors.push({ node_id: 'up', code: 'UPSTREAM_TIMEOUT', message: 'slow', metadata: {} });
  p.run(ctx);
  assert.equal(ctx.message['first'], 'UPSTREAM_TIMEOUT');
  assert.equal(ctx.errors.length, 1);
});

test('lua: return ctx, "respond" takes the respond port with the prepared response', () => {
  const p = program(`
    function execute(ctx)
      ctx.response.status_code = 403
      ctx.response.body = "blocked"
      return ctx, "respond"
    end`);
  const ctx = requestContext();
  assert.equal(p.run(ctx), 'respond');
  assert.equal(ctx.response.status, 403);
  assert.equal(ctx.response.body?.toString(), 'blocked');
});

test('lua: return ctx, "success" and return ctx, nil both mean success', () => {
  assert.equal(program('function execute(ctx) return ctx, "success" end').run(requestContext()), 'success');
  assert.equal(program('function execute(ctx) return ctx, nil end').run(requestContext()), 'success');
});

test('lua: LUA_BAD_PORT for an unknown port, with the context as it was before the script', () => {
  const p = program(`
    function execute(ctx)
      ctx.request.headers["x-mutated"] = { "yes" }
      return ctx, "client"
    end`);
  const ctx = requestContext();
  const err = failure(() => p.run(ctx));
  assert.equal(err.code, 'LUA_BAD_PORT');
  assert.match(err.message, /"client"/);
  assert.equal(ctx.request.headers['x-mutated'], undefined);
  assert.equal(
    failure(() => program('function execute(ctx) return ctx, 42 end').run(ctx)).code,
    'LUA_BAD_PORT',
  );
});

test('lua: LUA_BAD_PORT when only success is accepted and the script says respond', () => {
  const p = program('function execute(ctx) return ctx, "respond" end', { ports: ['success'] });
  assert.equal(failure(() => p.run(requestContext())).code, 'LUA_BAD_PORT');
});

test('lua: LUA_UNMARSHAL_ERROR for a non-table return and for a malformed field, naming it', () => {
  const nonTable = failure(() => program('function execute(ctx) return "nope" end').run(requestContext()));
  assert.equal(nonTable.code, 'LUA_UNMARSHAL_ERROR');
  assert.match(nonTable.message, /string/);
  const nothing = failure(() => program('function execute(ctx) end').run(requestContext()));
  assert.equal(nothing.code, 'LUA_UNMARSHAL_ERROR');
  const status = failure(() =>
    program('function execute(ctx) ctx.response.status_code = "teapot" return ctx end').run(requestContext()),
  );
  assert.equal(status.code, 'LUA_UNMARSHAL_ERROR');
  assert.match(status.message, /ctx\.response\.status_code/);
  const header = failure(() =>
    program('function execute(ctx) ctx.request.headers["x"] = { {} } return ctx end').run(requestContext()),
  );
  assert.match(header.message, /ctx\.request\.headers\['x'\]\[1\]/);
  const injected = failure(() =>
    program('function execute(ctx) ctx.response.headers["x"] = "a\\r\\nb: c" return ctx end').run(
      requestContext(),
    ),
  );
  assert.equal(injected.code, 'LUA_UNMARSHAL_ERROR');
  const request = failure(() =>
    program('function execute(ctx) ctx.request = 1 return ctx end').run(requestContext()),
  );
  assert.match(request.message, /ctx\.request/);
});

test('lua: LUA_EXECUTION_ERROR for a runtime error, with the script position', () => {
  const ctx = requestContext();
  const err = failure(() =>
    program('function execute(ctx)\n  ctx.request.headers.x = "1"\n  error("boom")\nend').run(ctx),
  );
  assert.equal(err.code, 'LUA_EXECUTION_ERROR');
  assert.match(err.message, /test:3: boom/);
  assert.equal(ctx.request.headers['x'], undefined);
});

test('lua: LUA_MARSHAL_ERROR when a message value has no Lua form', () => {
  const ctx = requestContext();
  ctx.message['n'] = 10n;
  const err = failure(() => program('function execute(ctx) local m = ctx.message return ctx end').run(ctx));
  assert.equal(err.code, 'LUA_MARSHAL_ERROR');
});

test('lua: LUA_LOAD_ERROR for a syntax error or a failing top level, at load', () => {
  assert.equal(loadFailure(() => program('function execute(ctx) return ctx')).code, 'LUA_LOAD_ERROR');
  assert.equal(
    loadFailure(() => program('error("top")\nfunction execute(ctx) return ctx end')).code,
    'LUA_LOAD_ERROR',
  );
});

test('lua: LUA_MISSING_EXECUTE when the script defines no execute function', () => {
  assert.equal(loadFailure(() => program('local x = 1')).code, 'LUA_MISSING_EXECUTE');
  assert.equal(loadFailure(() => program('execute = 5')).code, 'LUA_MISSING_EXECUTE');
});

test('lua: LUA_TIMEOUT stops `while true do end`, and the VM stays usable', () => {
  const p = program(
    'function execute(ctx) if ctx.request.path == "/loop" then while true do end end return ctx end',
    { timeoutMs: 100 },
  );
  const started = performance.now();
  const err = failure(() => p.run(requestContext({ url: '/loop' })));
  const elapsed = performance.now() - started;
  assert.equal(err.code, 'LUA_TIMEOUT');
  // Generous on a shared machine; the 2x bound is asserted end to end (test/plugins/scripting/budget.test.ts).
  assert.ok(elapsed < 1000, `stopped after ${elapsed.toFixed(0)} ms`);
  assert.equal(p.run(requestContext({ url: '/fine' })), 'success');
});

test('lua: LUA_TIMEOUT cannot be swallowed by pcall or a coroutine', () => {
  const pcallLoop = program(
    'function execute(ctx) while true do pcall(function() while true do end end) end end',
    { timeoutMs: 50 },
  );
  assert.equal(failure(() => pcallLoop.run(requestContext())).code, 'LUA_TIMEOUT');
  const coLoop = program(
    'function execute(ctx) while true do coroutine.resume(coroutine.create(function() while true do end end)) end end',
    { timeoutMs: 50 },
  );
  assert.equal(failure(() => coLoop.run(requestContext())).code, 'LUA_TIMEOUT');
});

test('lua: the compile-time validation run is bounded by the same timeout', () => {
  const started = performance.now();
  const err = loadFailure(() => program('while true do end', { timeoutMs: 80 }));
  assert.equal(err.code, 'LUA_TIMEOUT');
  assert.ok(performance.now() - started < 1000);
});

test('lua: timeout_ms 0 disables the budget', () => {
  const p = program('function execute(ctx) local n = 0 for i = 1, 200000 do n = n + i end return ctx end', {
    timeoutMs: 0,
  });
  assert.equal(p.run(requestContext()), 'success');
});

test('lua: globals, top-level locals and library tables never carry over between requests', () => {
  const p = program(`
    local calls = 0
    function execute(ctx)
      calls = calls + 1
      counter = (counter or 0) + 1
      ctx.message.calls = calls
      ctx.message.counter = counter
      ctx.message.upper_ok = type(string.upper) == "function"
      ctx.message.had_mark = _G.mark ~= nil
      mark = true
      pcall(function() string.upper = nil end)
      pcall(function() rawset(string, "upper", nil) end)
      return ctx
    end`);
  for (let i = 0; i < 3; i++) {
    const ctx = requestContext();
    p.run(ctx);
    assert.deepEqual(ctx.message, { calls: 1, counter: 1, upper_ok: true, had_mark: false });
  }
});

test('lua: require loads modules from the module folder, once per request, and refuses escapes', () => {
  const dir = tempDir();
  try {
    mkdirSync(join(dir.path, 'lib'));
    writeFileSync(
      join(dir.path, 'helpers.lua'),
      'loads = (loads or 0) + 1\nlocal M = {}\nfunction M.shout(s) return string.upper(s) .. "!" end\nreturn M\n',
    );
    writeFileSync(join(dir.path, 'lib', 'util.lua'), 'return { two = function() return 2 end }\n');
    const p = program(
      `local h = require("helpers")
       local h2 = require("helpers")
       local u = require("lib.util")
       function execute(ctx)
         ctx.message.out = h.shout("hi") .. u.two() .. tostring(h == h2) .. loads
         ctx.message.escape = select(2, pcall(require, "../secret"))
         return ctx
       end`,
      { modulesDir: dir.path },
    );
    const ctx = requestContext();
    p.run(ctx);
    assert.equal(ctx.message['out'], 'HI!2true1');
    assert.match(String(ctx.message['escape']), /invalid module name/);
    const again = requestContext();
    p.run(again);
    assert.equal(again.message['out'], 'HI!2true1');
  } finally {
    dir.remove();
  }
});

test('lua: require without a module folder fails with a clear message', () => {
  const err = loadFailure(() => program('require("x")\nfunction execute(ctx) return ctx end'));
  assert.equal(err.code, 'LUA_LOAD_ERROR');
  assert.match(err.message, /no module folder/);
});

test('lua: a call that grows the VM stack deeply leaves the VM correct for the next requests', () => {
  const p = program(`
    local function depth(n) if n == 0 then return 0 end return 1 + depth(n - 1) end
    function execute(ctx)
      local want = tonumber(ctx.request.headers["x-depth"][1])
      ctx.message.depth = depth(want)
      ctx.request.headers["x-done"] = { "yes" }
      return ctx
    end`);
  for (const depth of [5, 5000, 3, 20000, 1]) {
    const ctx = requestContext({ headers: { host: 'gateway.test', 'x-depth': String(depth) } });
    assert.equal(p.run(ctx), 'success');
    assert.equal(ctx.message['depth'], depth);
    assert.equal(ctx.request.headers['x-done'], 'yes');
  }
});

test('lua: non-ASCII header values reach the script as UTF-8 bytes and come back unchanged', () => {
  const p = program(`
    function execute(ctx)
      local v = ctx.request.headers["x-name"][1]
      ctx.message.len = #v
      ctx.request.headers["x-echo"] = { v .. "!" }
      return ctx
    end`);
  const ctx = requestContext({ headers: { host: 'gateway.test', 'x-name': 'zoë' } });
  p.run(ctx);
  assert.equal(ctx.message['len'], 4);
  assert.equal(ctx.request.headers['x-echo'], 'zoë!');
});

test('lua (C1): an xpcall message handler that loops cannot outlive the budget, in process too', () => {
  for (const source of [
    'function execute(ctx) xpcall(function() error("x") end, function() while true do end end) return ctx end',
    'function execute(ctx) xpcall(function() while true do end end, function() while true do end end) return ctx end',
    'function execute(ctx) while true do xpcall(function() error("x") end, function(m) error(m) end) end end',
  ]) {
    const p = program(source, { timeoutMs: 50 });
    const started = performance.now();
    assert.equal(failure(() => p.run(requestContext())).code, 'LUA_TIMEOUT', source);
    assert.ok(performance.now() - started < 2000, source);
  }
  const top = loadFailure(() =>
    program(
      'xpcall(function() error(1) end, function() while true do end end) function execute(ctx) return ctx end',
      {
        timeoutMs: 50,
      },
    ),
  );
  assert.equal(top.code, 'LUA_TIMEOUT');
});

test('lua (L7): ctx.response.body = ctx.request.body copies the body', () => {
  const p = program('function execute(ctx) ctx.response.body = ctx.request.body return ctx end');
  const ctx = requestContext({ method: 'POST' });
  ctx.request.body = Buffer.from('echo me');
  assert.equal(p.run(ctx), 'success');
  assert.equal(String(ctx.response.body), 'echo me');
  assert.equal(String(ctx.request.body), 'echo me');
});

test('lua (M4): print keeps at most 20 lines of 1024 bytes per run and says how many it dropped', () => {
  const lines: string[] = [];
  const p = program(
    'function execute(ctx) for i = 1, 500 do print(string.rep("p", 5000), i) end return ctx end',
    {
      print: (line) => lines.push(line),
    },
  );
  assert.equal(p.run(requestContext()), 'success');
  assert.equal(lines.length, 21);
  assert.ok(lines.slice(0, 20).every((l) => l.length <= 1025));
  assert.match(lines[20] ?? '', /480 more print lines dropped/);
});
