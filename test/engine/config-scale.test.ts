import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scaleConfig, scaleConfigYaml } from '../../bench/config-scale-config.js';
import { checkGatewayShape, parseGatewayConfig } from '../../src/config/gateway.js';
import { OFF_THREAD_PARSE_BYTES, parseGatewayConfigOffThread } from '../../src/config/parse-off-thread.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { compileGateway, compileGatewayAsync } from '../../src/engine/compile.js';
import { createGatewayScope } from '../../src/observability/gateway-scope.js';
import { compileWith } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { registry } from '../../src/plugins/index.js';
import { templateFactory } from '../../src/engine/templates.js';
import { forcedMinorCollections } from '../support/forced-collections.js';
import { countTurns } from '../support/event-loop-turns.js';

/** Compiles `count` routes + policies; returns the milliseconds it took. */
async function compileMs(count: number): Promise<number> {
  const config = checkGatewayShape(scaleConfig(count, { upstreamPort: 9 }));
  const started = performance.now();
  const runtime = compileWith(config, silentLogger, {});
  const took = performance.now() - started;
  assert.equal(runtime.router.size, count);
  assert.equal(runtime.policies.size, count);
  await runtime.close();
  return took;
}

test('config scale: compiling 10,000 routes and policies costs about ten times 1,000 (linear, within 30x)', async () => {
  await compileMs(200); // warm-up: first compiles of each schema and JIT
  const small = Math.min(await compileMs(1000), await compileMs(1000));
  const large = await compileMs(10_000);
  assert.ok(large < small * 30, `10k took ${large.toFixed(0)} ms, 1k took ${small.toFixed(0)} ms`);
});

test('config scale: the reload compiler yields to the event loop and builds the same runtime', async () => {
  const config = checkGatewayShape(scaleConfig(2000, { upstreamPort: 9 }));
  const loop = countTurns();
  const runtime = await compileGatewayAsync(
    structuredClone(config),
    { registry, logger: silentLogger, env: {}, templateFactory: templateFactory({}) },
    1,
  );
  const turns = loop.stop();
  const reference = compileWith(structuredClone(config), silentLogger, {});
  assert.ok(turns >= 10, `the event loop turned ${turns} times during the compile`);
  assert.deepEqual([...runtime.policies.keys()], [...reference.policies.keys()]);
  for (const [method, host, path] of [
    ['GET', 'svc1997.example.test', '/h/x'],
    ['GET', 'gw', '/svc1999/a'],
    ['HEAD', 'gw', '/items/1998'],
  ] as const) {
    assert.equal(
      runtime.router.match(method, host, path, {})?.name,
      reference.router.match(method, host, path, {})?.name,
    );
  }
  assert.equal(runtime.router.match('GET', 'svc1997.example.test', '/h/x', {})?.name, 'r1997');
  await Promise.all([runtime.close(), reference.close()]);
});

test('config scale: a reload carrying over 2,000 unchanged policies lets requests run while it compares them', async () => {
  const options = {
    registry,
    logger: silentLogger,
    env: {},
    templateFactory: templateFactory({}),
    scope: createGatewayScope(),
  };
  const config = checkGatewayShape(scaleConfig(2000, { upstreamPort: 9 }));
  const running = compileGateway(structuredClone(config), options);
  const loop = countTurns();
  // A zero slice: the compiler lets the event loop turn at every pause it makes.
  const next = await compileGatewayAsync(structuredClone(config), { ...options, previous: running }, 0);
  const turns = loop.stop();
  assert.equal(next.compiled, 0, 'every policy is carried over');
  // Pauses every 256 items in the name checks of policies and routes and the comparisons, and
  // every 16 routes of the route table.
  assert.ok(turns >= 3 * Math.floor(2000 / 256), `the event loop turned ${turns} times`);
  await next.close();
  await running.close();
});

test('config scale: a large gateway.yaml parsed in a worker thread equals the main-thread parse', async () => {
  const text = scaleConfigYaml(1000, { upstreamPort: 9 });
  assert.ok(text.length > OFF_THREAD_PARSE_BYTES, 'large enough to take the worker path');
  assert.deepEqual(await parseGatewayConfigOffThread(text), parseGatewayConfig(text));
});

test('config scale: a YAML error in a large file is reported at the same line off-thread', async () => {
  const text = `${scaleConfigYaml(1000, { upstreamPort: 9 })}consumers: [unclosed\n`;
  const expected = (() => {
    try {
      parseGatewayConfig(text);
    } catch (err) {
      return (err as ConfigRejected).issues;
    }
    return [];
  })();
  assert.equal(expected.length, 1);
  assert.ok(expected[0]?.line !== undefined, 'the main-thread parse locates the error');
  await assert.rejects(parseGatewayConfigOffThread(text), (err: unknown) => {
    assert.ok(err instanceof ConfigRejected);
    assert.deepEqual(err.issues, expected);
    return true;
  });
});

test('config scale: a reload compile collects what each slice built before the next slice', async () => {
  const config = checkGatewayShape(scaleConfig(300, { upstreamPort: 9 }));
  const options = { registry, logger: silentLogger, env: {}, templateFactory: templateFactory({}) };
  let runtime: Awaited<ReturnType<typeof compileGatewayAsync>> | undefined;
  // Zero-length slices and a collection after every one: one at least per policy compiled.
  const forced = await forcedMinorCollections(async () => {
    runtime = await compileGatewayAsync(structuredClone(config), options, 0, 0);
  });
  assert.ok(forced >= 300, `${forced} young-generation collections for 300 policies`);
  assert.equal(runtime?.policies.size, 300);
  // The shipped slicing collects too, once per slice of compiling, not at every pause.
  const sliced = await forcedMinorCollections(async () => {
    const again = await compileGatewayAsync(structuredClone(config), options, 0);
    await again.close();
  });
  assert.ok(sliced < forced, `${sliced} collections with the shipped slices, ${forced} with none`);
  await runtime?.close();
});
