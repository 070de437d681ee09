import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { PluginDefinition } from '../../../src/core/plugin.js';
import { read, startAdmin, type AdminHarness } from '../../admin/harness.js';
import type { Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { startSlowOrigin } from '../streaming-probe.js';
import { assertSchemaRejects, runNow } from '../../support/node-run.js';

/** The behaviours gzip and brotli share, run against one of them. */
export function compressionCases(
  plugin: PluginDefinition<never, 'success'>,
  token: string,
  decode: (body: Buffer) => Buffer,
  levels: { valid: number; invalid: number },
): void {
  const type = plugin.type;
  const html = '<html>' + 'hello '.repeat(50) + '</html>';

  function response(body: string, contentType = 'text/html; charset=utf-8', accept = `${token}, deflate`) {
    const ctx = requestContext({ headers: { host: 'h', 'accept-encoding': accept } });
    ctx.response.status = 200;
    ctx.response.headers = { 'content-type': contentType, 'content-length': String(body.length) };
    ctx.response.body = Buffer.from(body);
    return ctx;
  }

  test(`${type}: compresses a matching body, sets content-encoding, drops content-length`, () => {
    const ctx = response(html);
    assert.equal(runNow(instantiate(plugin, {}), ctx), 'success');
    assert.equal(ctx.response.headers['content-encoding'], token);
    assert.equal(ctx.response.headers['content-length'], undefined);
    assert.equal(decode(ctx.response.body!).toString(), html);
    assert.ok(ctx.response.body!.length < html.length);
    assert.equal(ctx.response.headers.vary, undefined);
  });

  test(`${type}: a strong ETag becomes weak once the bytes are compressed`, () => {
    const ctx = response(html);
    ctx.response.headers.etag = '"v1"';
    runNow(instantiate(plugin, {}), ctx);
    assert.equal(ctx.response.headers.etag, 'W/"v1"');
  });

  test(`${type}: vary adds Vary: Accept-Encoding once`, () => {
    const ctx = response(html);
    ctx.response.headers.vary = 'Origin';
    runNow(instantiate(plugin, { vary: true, comp_level: levels.valid }), ctx);
    assert.deepEqual(ctx.response.headers.vary, ['Origin', 'Accept-Encoding']);
  });

  test(`${type}: skipped when the client does not accept it, q=0, wrong type, short body or already encoded`, () => {
    const node = instantiate(plugin, { types: ['text/html', 'application/json'] });
    const cases = [
      response(html, 'text/html', 'identity'),
      response(html, 'text/html', `${token};q=0`),
      response(html, 'image/png'),
      response('<p>tiny</p>'),
    ];
    const encoded = response(html);
    encoded.response.headers['content-encoding'] = 'zstd';
    cases.push(encoded);
    for (const ctx of cases) {
      const before = ctx.response.body;
      runNow(node, ctx);
      assert.equal(ctx.response.body, before);
    }
    const star = response(html, 'text/html', '*');
    runNow(node, star);
    assert.equal(star.response.headers['content-encoding'], token);
  });

  test(`${type}: types "*" compresses any content type; min_length is configurable`, () => {
    const ctx = response('{"a":1}', 'application/json');
    runNow(instantiate(plugin, { types: '*', min_length: 5 }), ctx);
    assert.equal(decode(ctx.response.body!).toString(), '{"a":1}');
  });

  test(`${type}: never reads the response body for streaming inference`, () => {
    assert.equal(plugin.readsResponseBody!({} as never), false);
  });

  test(`${type}: config rejections`, () => {
    assertSchemaRejects(() => instantiate(plugin, { comp_level: levels.invalid }), 'comp_level');
    assertSchemaRejects(() => instantiate(plugin, { min_length: 0 }), 'min_length');
    assertSchemaRejects(() => instantiate(plugin, { types: [] }), 'types');
    assertSchemaRejects(() => instantiate(plugin, { level: 3 }), 'level');
  });

  const harnesses: AdminHarness[] = [];
  const origins: Origin[] = [];
  after(async () => {
    await Promise.all(harnesses.map((h) => h.stop()));
    await Promise.all(origins.map((o) => o.close()));
  });

  test(`${type}: a streamed upstream stays streamed and is compressed on the fly`, async () => {
    const slow = await startSlowOrigin('text/event-stream');
    origins.push(slow.origin);
    const policy = {
      name: 'zip',
      nodes: [
        { id: 'in', type: 'listener' },
        { id: 'up', type: 'upstream', config: { targets: [slow.origin.target] } },
        { id: 'zip', type, config: { types: ['text/event-stream'] } },
        { id: 'out', type: 'client' },
      ],
      edges: [
        { from: 'in.out', to: 'up.in' },
        { from: 'up.success', to: 'zip.in' },
        { from: 'zip.success', to: 'out.in' },
      ],
    };
    const h = await startAdmin({
      gatewayYaml: `routes: [{ name: z, match: { path: /z }, policy: zip }]\npolicies: ${JSON.stringify([policy])}\n`,
    });
    harnesses.push(h);
    const validated = await read(await h.call('POST', '/api/policies/validate', policy));
    assert.deepEqual((validated.body as { buffering: unknown[] }).buffering, []);
    const probe = await slow.probeRaw(`${h.data}/z`, { 'accept-encoding': token });
    assert.equal(probe.streamed, true, 'the first compressed bytes arrived while the origin held');
    assert.equal(probe.headers['content-encoding'], token);
    assert.equal(decode(probe.body).toString(), 'data: one\n\ndata: two\n\n');
  });
}
